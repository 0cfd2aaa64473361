package streams

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"

	"orch.io/orch/fakecri/script"
)

// answerHTTP answers each request read from conn with a, until the client closes.
func answerHTTP(conn io.ReadWriter, a *script.HTTPAnswer) error {
	code := a.Status
	if code == 0 {
		code = http.StatusOK
	}
	r := bufio.NewReader(conn)
	for {
		req, err := http.ReadRequest(r)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
		var head bytes.Buffer
		fmt.Fprintf(&head, "HTTP/1.1 %d %s\r\n", code, http.StatusText(code))
		keys := make([]string, 0, len(a.Headers))
		for k := range a.Headers {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&head, "%s: %s\r\n", k, a.Headers[k])
		}
		if _, ok := a.Headers["Content-Type"]; !ok {
			head.WriteString("Content-Type: text/plain; charset=utf-8\r\n")
		}
		head.WriteString("Content-Length: " + strconv.Itoa(len(a.Body)) + "\r\n\r\n")
		if req.Method != http.MethodHead {
			head.WriteString(a.Body)
		}
		if _, err := conn.Write(head.Bytes()); err != nil {
			return err
		}
		if req.Close {
			return nil
		}
	}
}

func ignoreClosed(err error) error {
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrClosedPipe) {
		return nil
	}
	return err
}
