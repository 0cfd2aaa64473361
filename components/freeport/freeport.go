// Package freeport finds loopback TCP ports nothing listens on, for the servers that tests, the
// conformance suite and orchload start. A port is released before it is returned, so another
// process may take it in between; a caller that cannot bind it starts again with a new one.
package freeport

import "net"

// Get returns a loopback TCP port nothing listens on now.
func Get() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// TB is what For needs of a test (a testing.TB), so programs using Get do not import testing.
type TB interface {
	Helper()
	Fatal(args ...any)
}

// For is Get for a test, which fails when no port can be had.
func For(t TB) int {
	t.Helper()
	port, err := Get()
	if err != nil {
		t.Fatal(err)
	}
	return port
}
