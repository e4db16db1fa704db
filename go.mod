module github.com/fitgo/fitgo

go 1.23
