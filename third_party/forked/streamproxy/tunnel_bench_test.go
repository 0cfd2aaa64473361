package proxy

import (
	"bytes"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"syscall"
	"testing"
	"time"

	constants "k8s.io/apimachinery/pkg/util/portforward"
	"k8s.io/apimachinery/pkg/util/proxy"
	restconfig "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
)

// BenchmarkTunnelDownload is a port-forward's download through the tunnel as kubectl runs it:
// kubectl's SPDY-over-WebSocket client, the tunnel and the upgrade-aware proxy on a TLS server, and
// an upstream SPDY server on TLS (the node's) writing 16 MiB into each stream in the 32 KiB chunks
// of a copy. bytes/s is the whole chain's on this machine, and so is cpu-ms/op, the process's CPU
// time (user and system) per 16 MiB, the figure that holds on a loaded machine; the tunnel's share
// is what changes.
func BenchmarkTunnelDownload(b *testing.B) {
	const size = 16 << 20
	payload := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	upstream := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if _, err := httpstream.Handshake(req, w, []string{constants.PortForwardV1Name}); err != nil {
			b.Error(err)
			return
		}
		conn := spdy.NewResponseUpgrader().UpgradeResponse(w, req, func(s httpstream.Stream, _ <-chan struct{}) error {
			go func() {
				defer s.Close() //nolint:errcheck
				for p := payload; len(p) > 0; p = p[min(len(p), 32<<10):] {
					if _, err := s.Write(p[:min(len(p), 32<<10)]); err != nil {
						return
					}
				}
			}()
			return nil
		})
		if conn == nil {
			return
		}
		<-conn.CloseChan()
	}))
	defer upstream.Close()
	u, err := url.Parse(upstream.URL)
	if err != nil {
		b.Fatal(err)
	}
	transport := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	tunnel := httptest.NewTLSServer(NewTunnelingHandler(proxy.NewUpgradeAwareHandler(u, transport, false, true, proxy.NewErrorResponder(&fakeResponder{}))))
	defer tunnel.Close()
	tu, err := url.Parse(tunnel.URL)
	if err != nil {
		b.Fatal(err)
	}
	dialer, err := portforward.NewSPDYOverWebsocketDialer(tu, &restconfig.Config{Host: tu.Host, TLSClientConfig: restconfig.TLSClientConfig{Insecure: true}})
	if err != nil {
		b.Fatal(err)
	}
	client, _, err := dialer.Dial(constants.PortForwardV1Name)
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close() //nolint:errcheck
	b.SetBytes(size)
	b.ReportAllocs()
	before := cpuTime(b)
	n := 0
	for b.Loop() {
		n++
		stream, err := client.CreateStream(http.Header{})
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, stream)
		if err != nil || n != size {
			b.Fatalf("%d of %d bytes: %v", n, size, err)
		}
		stream.Close() //nolint:errcheck
	}
	b.ReportMetric(float64(cpuTime(b)-before)/float64(time.Millisecond)/float64(n), "cpu-ms/op")
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
