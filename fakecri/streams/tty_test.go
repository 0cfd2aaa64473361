package streams

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// The terminal cooks what is typed as a pty in canonical mode does: echoed, Enter ends a line,
// DEL and backspace erase, ^C drops the line, ^D on an empty line ends the input; output's "\n"
// is written "\r\n".
func TestTerminalLineDiscipline(t *testing.T) {
	for _, tc := range []struct {
		name, typed, read, echo string
	}{
		{"enter ends a line", "ls\r", "ls\n", "ls\r\n"},
		{"erase", "lx\x7fs\r", "ls\n", "lx\b \bs\r\n"},
		{"backspace on nothing", "\bls\n", "ls\n", "ls\r\n"},
		{"^C drops the line", "rm -rf\x03ls\r", "\nls\n", "rm -rf^C\r\nls\r\n"},
		{"^D on an empty line ends", "ls\r\x04echo\r", "ls\n", "ls\r\n"},
		{"the last line without Enter", "ls", "ls", "ls"},
	} {
		var out bytes.Buffer
		term := newTerminal(iotest.OneByteReader(strings.NewReader(tc.typed)), &out) // as typed, a key a read
		read, err := io.ReadAll(term)
		if err != nil || string(read) != tc.read || out.String() != tc.echo {
			t.Errorf("%s: read %q, echoed %q, %v; want %q, %q", tc.name, read, out.String(), err, tc.read, tc.echo)
		}
	}
	var out bytes.Buffer
	newTerminal(nil, &out).out.Write([]byte("a\nb\n"))
	if out.String() != "a\r\nb\r\n" {
		t.Errorf("output %q, want a\\r\\nb\\r\\n", out.String())
	}
}
