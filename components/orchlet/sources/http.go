package sources

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
)

// HTTPSource reads --manifest-url: one Pod, or a List or PodList of pods.
type HTTPSource struct {
	Client *http.Client
	URL    string
	// Header is --manifest-url-header: values of one name are sent in their order.
	Header map[string][]string
}

// Name is the config source annotation value of HTTP pods.
func (h *HTTPSource) Name() string { return SourceHTTP }

// Read fetches the URL. An answer other than 200 is an error and changes nothing; an empty body is
// an empty source, as in Kubernetes.
func (h *HTTPSource) Read(ctx context.Context) ([]Manifest, error) {
	docs, err := h.readDocs(ctx)
	if err != nil {
		return nil, err
	}
	return decodeDocs(docs), nil
}

func (h *HTTPSource) readDocs(ctx context.Context) ([]doc, error) {
	if h.Client == nil {
		return nil, fmt.Errorf("%s: no HTTP client", h.URL)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.URL, err)
	}
	for _, name := range slices.Sorted(maps.Keys(h.Header)) {
		for _, v := range h.Header[name] {
			req.Header.Add(name, v)
		}
	}
	resp, err := h.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := readLimited(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", h.URL, resp.Status)
	}
	if len(data) == 0 {
		return nil, nil
	}
	return []doc{{origin: h.URL, data: data, lists: true}}, nil
}
