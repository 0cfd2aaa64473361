package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"testing"
)

// BenchmarkCreateEvents is the server's cost of an event create over TLS from 8 keep-alive
// clients, on memory storage: what a profile of the create path reads.
func BenchmarkCreateEvents(b *testing.B) {
	srv, _, _ := startServer(b)
	client, url := srv.Client(), srv.URL+eventsPath
	// Each client keeps its connection, as orchload's do: the handshake is not the create's cost.
	client.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
	ev := sample("bench")
	ev["metadata"] = map[string]any{"generateName": "bench-"}
	body, _ := json.Marshal(ev)
	b.SetParallelism(max(1, (8+runtime.GOMAXPROCS(0)-1)/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("User-Agent", "orchload/v0")
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				b.Errorf("answer %d", resp.StatusCode)
				return
			}
		}
	})
}
