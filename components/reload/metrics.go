package reload

import (
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The status label of a reload.
const (
	Success = "success"
	Failure = "failure"
)

// Metrics are Kubernetes' metrics of the automatic reload of one kind of configuration file,
// apiserver_<kind>_config_controller_automatic_reloads_total{status} and
// ..._automatic_reload_last_timestamp_seconds{status}, and for a kind that keeps it
// ..._last_config_info{hash}, each labelled with apiserver_id_hash, a hash of the server's
// identity. A nil *Metrics records nothing.
type Metrics struct {
	reloads    *prometheus.CounterVec
	lastReload *prometheus.GaugeVec
	lastConfig *prometheus.GaugeVec
	idHash     string
}

// NewMetrics registers in reg the metrics of kind ("authentication", "authorization"), with
// last_config_info when configInfo is set.
func NewMetrics(reg prometheus.Registerer, kind, apiServerID string, configInfo bool) (*Metrics, error) {
	ns, sub := "apiserver", kind+"_config_controller"
	m := &Metrics{
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: "automatic_reloads_total",
			Help: "Total number of automatic reloads of " + kind + " configuration split by status and apiserver identity.",
		}, []string{"status", "apiserver_id_hash"}),
		lastReload: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Subsystem: sub, Name: "automatic_reload_last_timestamp_seconds",
			Help: "Timestamp of the last automatic reload of " + kind + " configuration split by status and apiserver identity.",
		}, []string{"status", "apiserver_id_hash"}),
		idHash: hash([]byte(apiServerID)),
	}
	collectors := []prometheus.Collector{m.reloads, m.lastReload}
	if configInfo {
		m.lastConfig = prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Subsystem: sub, Name: "last_config_info",
			Help: "Information about the last applied " + kind + " configuration with hash as label, split by apiserver identity.",
		}, []string{"apiserver_id_hash", "hash"})
		collectors = append(collectors, m.lastConfig)
	}
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering the %s reload metrics: %w", kind, err)
		}
	}
	return m, nil
}

// Record counts a reload of status at now.
func (m *Metrics) Record(status string, now time.Time) {
	if m == nil {
		return
	}
	m.reloads.WithLabelValues(status, m.idHash).Inc()
	m.lastReload.WithLabelValues(status, m.idHash).Set(float64(now.UnixNano()) / 1e9)
}

// applied names data as the content in force.
func (m *Metrics) applied(data []byte) {
	if m == nil || m.lastConfig == nil {
		return
	}
	m.lastConfig.Reset()
	m.lastConfig.WithLabelValues(m.idHash, hash(data)).Set(1)
}

// hash is Kubernetes' label form of a hash: "sha256:<hex>", empty for empty data.
func hash(data []byte) string {
	if len(data) == 0 {
		return ""
	}
	return fmt.Sprintf("sha256:%x", sha256.Sum256(data))
}
