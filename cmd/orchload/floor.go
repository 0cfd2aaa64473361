package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

// floorHandler answers as little as a server answering creates can: a POST's body is read and sent
// back with 201, as an API server answers a create with the object; anything else is 200 with an
// empty list (so /readyz and a count of stored events answer).
func floorHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method != http.MethodPost {
			_, _ = io.WriteString(w, `{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	})
}

// serveFloor serves floorHandler over HTTP/2 and TLS, as Go serves them, on a loopback port until
// SIGTERM, printing its URL: what --floor measures.
func serveFloor() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := httptest.NewUnstartedServer(floorHandler())
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	fmt.Println(srv.URL)
	<-ctx.Done()
	return nil
}

// startFloor runs serveFloor as a process of its own, so its CPU and memory are read as an API
// server's are; its certificate is self-signed and not verified (loopback only).
func startFloor() (*process, target, error) {
	dir, err := os.MkdirTemp("", "orchload-floor-")
	if err != nil {
		return nil, target{}, err
	}
	p, url, err := startSelf(dir, filepath.Join(dir, "floor.log"), "--serve-floor")
	if err != nil {
		return nil, target{}, errors.Join(fmt.Errorf("the floor server: %w", err), os.RemoveAll(dir))
	}
	t := target{url: url, group: "events.orch.io", tls: &tls.Config{InsecureSkipVerify: true}, cpu: p.cpuTime, rss: p.rssMiB}
	return p, t, nil
}
