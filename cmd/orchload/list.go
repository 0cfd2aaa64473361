package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// listPage is the part of an EventList the tool reads.
type listPage struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

// get sends a GET and returns the body (when into is nil, only its size is kept).
func get(ctx context.Context, c *http.Client, url string, into any) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return 0, fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, msg)
	}
	if into == nil {
		return io.Copy(io.Discard, resp.Body)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	return int64(len(body)), json.Unmarshal(body, into)
}

type listResult struct {
	Namespace   string  `json:"namespace"`
	Items       int     `json:"items"`
	Created     int     `json:"created"`
	Runs        int     `json:"runs"`
	Bytes       int64   `json:"bytes"`
	Latency     summary `json:"latency"`
	ServerCPUMs float64 `json:"serverCpuMsPerList,omitempty"`
}

// runList makes sure ns holds at least want events (creating the shortfall with clients), calls
// filled, and times runs full LISTs of it, from sending the request to reading the last byte.
func runList(ctx context.Context, t target, ns, prefix string, clients, want, runs int, filled func() error) (listResult, error) {
	c := t.newClient()
	defer c.CloseIdleConnections()
	url := eventsURL(t, ns)
	var page listPage
	if _, err := get(ctx, c, url, &page); err != nil {
		return listResult{}, err
	}
	res := listResult{Namespace: ns, Runs: runs}
	if short := want - len(page.Items); short > 0 {
		created, errs := fill(ctx, t, ns, prefix, clients, short)
		res.Created = created
		if errs.count > 0 {
			return res, fmt.Errorf("%d of %d creates failed while filling %s, first: %v", errs.count, short, ns, errs.samples)
		}
	}
	if err := filled(); err != nil {
		return res, err
	}
	// This untimed LIST counts the items and warms the connection and the server's caches.
	page = listPage{}
	if _, err := get(ctx, c, url, &page); err != nil {
		return res, err
	}
	res.Items = len(page.Items)
	lat := make([]time.Duration, 0, runs)
	cpu := t.cpuPer()
	for range runs {
		start := time.Now()
		n, err := get(ctx, c, url, nil)
		if err != nil {
			return res, err
		}
		lat = append(lat, time.Since(start))
		res.Bytes = n
	}
	res.ServerCPUMs = cpu(runs)
	res.Latency = summarize(lat)
	return res, nil
}
