// Package certstest issues certificates from a throwaway CA for tests: server certificates for
// loopback hosts and client certificates with a user and groups, as PEM files a process can load.
package certstest
