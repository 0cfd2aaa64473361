package streams

import (
	"bytes"
	"io"
	"sync"
)

// Attachment receives the log lines of a container while a client is attached.
type Attachment struct {
	mu             sync.Mutex
	stdout, stderr bytes.Buffer
	ready          chan struct{}
}

// Push hands the attached client a line the container logged on stream ("stdout" or "stderr").
func (a *Attachment) Push(stream, line string) {
	a.mu.Lock()
	if stream == "stderr" {
		a.stderr.WriteString(line)
	} else {
		a.stdout.WriteString(line)
	}
	a.mu.Unlock()
	select {
	case a.ready <- struct{}{}:
	default:
	}
}

func (a *Attachment) flush(stdout, stderr io.Writer) error {
	a.mu.Lock()
	o, e := bytes.Clone(a.stdout.Bytes()), bytes.Clone(a.stderr.Bytes())
	a.stdout.Reset()
	a.stderr.Reset()
	a.mu.Unlock()
	if _, err := stdout.Write(o); len(o) > 0 && err != nil {
		return err
	}
	if _, err := stderr.Write(e); len(e) > 0 && err != nil {
		return err
	}
	return nil
}
