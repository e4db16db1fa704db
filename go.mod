module github.com/fitgo/fitgo

go 1.23

require github.com/stretchr/testify v1.12.1 // indirect
