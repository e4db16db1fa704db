// Package coexist tests fitgo in one binary with automaxprocs and
// automemlimit (see prog), in real cgroups. It lives in the bench module
// because the library's go.mod stays free of both.
package coexist
