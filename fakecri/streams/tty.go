package streams

import (
	"bytes"
	"io"
	"sync"
)

// terminal is the line discipline of a container's terminal (a pty in canonical mode, as
// `kubectl exec -it` and `kubectl attach -it` get one): what is typed is echoed, Enter (CR) ends a
// line, DEL or backspace erases a character, ^C drops the line, ^D on an empty line is end of
// input; output has each "\n" turned into "\r\n".
type terminal struct {
	in  io.Reader
	out *ttyWriter

	pending []byte // cooked input not yet read
	line    []byte // the line being typed
	eof     bool
}

func newTerminal(in io.Reader, out io.Writer) *terminal {
	if in == nil {
		in = EOF{}
	}
	return &terminal{in: in, out: &ttyWriter{w: out}}
}

// Read answers at most one cooked line per call, so that a reader prompting before each read
// prompts once a line.
func (t *terminal) Read(p []byte) (int, error) {
	for len(t.pending) == 0 {
		if t.eof {
			return 0, io.EOF
		}
		var raw [256]byte
		n, err := t.in.Read(raw[:])
		for _, c := range raw[:n] {
			t.typed(c)
		}
		if err != nil && len(t.pending) == 0 {
			if len(t.line) > 0 {
				t.pending, t.line = t.line, nil
				break
			}
			return 0, err
		}
	}
	end := bytes.IndexByte(t.pending, '\n') + 1
	if end == 0 {
		end = len(t.pending)
	}
	n := copy(p, t.pending[:end])
	t.pending = t.pending[n:]
	return n, nil
}

// typed takes one typed character.
func (t *terminal) typed(c byte) {
	switch c {
	case '\r', '\n':
		t.out.raw([]byte("\r\n"))
		t.pending = append(t.pending, append(t.line, '\n')...)
		t.line = nil
	case 0x7f, '\b':
		if len(t.line) > 0 {
			t.line = t.line[:len(t.line)-1]
			t.out.raw([]byte("\b \b"))
		}
	case 0x03: // ^C
		t.out.raw([]byte("^C\r\n"))
		t.line = nil
		t.pending = append(t.pending, '\n')
	case 0x04: // ^D
		if len(t.line) == 0 {
			t.eof = true
			return
		}
		t.pending = append(t.pending, t.line...)
		t.line = nil
	default:
		t.line = append(t.line, c)
		t.out.raw([]byte{c})
	}
}

// ttyWriter writes output as a terminal shows it, "\n" as "\r\n"; several writers (the echo, the
// process) share it.
type ttyWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (t *ttyWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.w == nil {
		return len(p), nil
	}
	if _, err := t.w.Write(bytes.ReplaceAll(p, []byte("\n"), []byte("\r\n"))); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (t *ttyWriter) raw(p []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.w != nil {
		t.w.Write(p)
	}
}
