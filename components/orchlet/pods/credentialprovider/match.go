package credentialprovider

import (
	"net"
	"net/url"
	"path/filepath"
	"strings"
)

// URLsMatch is the kubelet's URLsMatchStr: glob and target (schemeless, "host[:port][/path]") have
// the same port, as many host parts each matching the glob's part (filepath.Match), and the
// glob's path is a prefix of the target's.
func URLsMatch(glob, target string) bool {
	g, err1 := url.Parse("https://" + glob)
	t, err2 := url.Parse("https://" + target)
	if err1 != nil || err2 != nil {
		return false
	}
	gParts, gPort := splitHost(g.Host)
	tParts, tPort := splitHost(t.Host)
	if gPort != tPort || len(gParts) != len(tParts) || !strings.HasPrefix(t.Path, g.Path) {
		return false
	}
	for i, p := range gParts {
		if ok, err := filepath.Match(p, tParts[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

func splitHost(hostport string) ([]string, string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.Split(host, "."), port
}

// registry is the kubelet's parseRegistry: the image's first component, its registry host.
func registry(image string) string {
	host, _, _ := strings.Cut(image, "/")
	return host
}
