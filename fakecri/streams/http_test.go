package streams

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"

	"orch.io/orch/fakecri/script"
)

// A port rule's HTTP answer is given to every request on the connection, its status defaulting
// to 200 and its body left out of a HEAD's answer, until the client closes.
func TestAnswerHTTP(t *testing.T) {
	client, server := net.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- ignoreClosed(answerHTTP(server, &script.HTTPAnswer{Headers: map[string]string{"X-Pod": "web"}, Body: "hello"}))
		server.Close()
	}()
	r := bufio.NewReader(client)
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		req, _ := http.NewRequest(method, "http://pod/", nil)
		go req.Write(client)
		resp, err := http.ReadResponse(r, req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		want := map[string]string{http.MethodGet: "hello", http.MethodHead: ""}[method]
		if resp.StatusCode != 200 || resp.Header.Get("X-Pod") != "web" || resp.ContentLength != 5 || string(body) != want {
			t.Errorf("%s: %d %v %d %q", method, resp.StatusCode, resp.Header, resp.ContentLength, body)
		}
	}
	client.Close()
	if err := <-done; err != nil {
		t.Errorf("the responder ended with %v", err)
	}
}
