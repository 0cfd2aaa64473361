package freeport

import (
	"net"
	"strconv"
	"testing"
)

// The port For answers can be listened on.
func TestFor(t *testing.T) {
	port := For(t)
	if port <= 0 {
		t.Fatalf("For() = %d", port)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
}
