package eventratelimit

import (
	"strings"
	"testing"

	"github.com/benbjohnson/clock"
)

const header = "apiVersion: eventratelimit.admission.orch.io/v1alpha1\nkind: Configuration\n"

// New refuses every configuration Kubernetes refuses, with its messages, and a few more that
// orch's strict decoding catches (unknown fields, a wrong apiVersion or kind).
func TestNewConfiguration(t *testing.T) {
	tests := []struct {
		name   string
		config string // "" for none: the plugin enabled without a configuration
		want   string // "" when accepted
	}{
		{"every type", header + "limits:\n- {type: Server, qps: 5000, burst: 20000}\n- {type: Namespace, qps: 50, burst: 100, cacheSize: 2000}\n- {type: User, qps: 10, burst: 50}\n- {type: SourceAndObject, qps: 1, burst: 5, cacheSize: 10}\n", ""},
		{"json", `{"apiVersion":"eventratelimit.admission.orch.io/v1alpha1","kind":"Configuration","limits":[{"type":"Server","qps":1,"burst":1}]}`, ""},
		{"Kubernetes' group", "apiVersion: eventratelimit.admission.k8s.io/v1alpha1\nkind: Configuration\nlimits:\n- {type: Server, qps: 1, burst: 1}\n", ""},
		{"no configuration", "", "limits: Invalid value: null: must not be empty"},
		{"empty limits", header + "limits: []\n", "limits: Invalid value: []: must not be empty"},
		{"unknown type", header + "limits:\n- {type: Pod, qps: 1, burst: 1}\n", `limits[0].type: Unsupported value: "Pod": supported values: "Server", "Namespace", "User", "SourceAndObject"`},
		{"zero qps", header + "limits:\n- {type: Server, burst: 1}\n", "limits[0].qps: Invalid value: 0: must be positive"},
		{"negative burst", header + "limits:\n- {type: Server, qps: 1, burst: -1}\n", "limits[0].burst: Invalid value: -1: must be positive"},
		{"cache size on a server limit", header + "limits:\n- {type: Server, qps: 1, burst: 1, cacheSize: 10}\n", "limits[0].cacheSize: Invalid value: 10: a Server limit has one bucket"},
		{"negative cache", header + "limits:\n- {type: User, qps: 1, burst: 1, cacheSize: -1}\n", "limits[0].cacheSize: Invalid value: -1: must not be negative"},
		{"every problem", header + "limits:\n- {type: User, qps: 0, burst: 0}\n", "[limits[0].burst: Invalid value: 0: must be positive, limits[0].qps: Invalid value: 0: must be positive]"},
		{"no apiVersion", "kind: Configuration\nlimits:\n- {type: Server, qps: 1, burst: 1}\n", `apiVersion: Unsupported value: "": supported values: "eventratelimit.admission.orch.io/v1alpha1", "eventratelimit.admission.k8s.io/v1alpha1"`},
		{"another group", "apiVersion: eventratelimit.admission.example.com/v1alpha1\nkind: Configuration\nlimits:\n- {type: Server, qps: 1, burst: 1}\n",
			`apiVersion: Unsupported value: "eventratelimit.admission.example.com/v1alpha1": supported values: "eventratelimit.admission.orch.io/v1alpha1", "eventratelimit.admission.k8s.io/v1alpha1"`},
		{"another version", "apiVersion: eventratelimit.admission.orch.io/v1\nkind: Configuration\n", `apiVersion: Unsupported value: "eventratelimit.admission.orch.io/v1"`},
		{"another kind", "apiVersion: eventratelimit.admission.orch.io/v1alpha1\nkind: AdmissionConfiguration\n", `kind: Unsupported value: "AdmissionConfiguration": supported values: "Configuration"`},
		{"unknown field", header + "limits:\n- {type: Server, qps: 1, burst: 1, qsp: 2}\n", `unknown field "limits[0].qsp"`},
		{"wrong type", header + "limits:\n- {type: Server, qps: fast, burst: 1}\n", "cannot unmarshal string"},
		{"not yaml", "limits: [", "yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var data []byte
			if tt.config != "" {
				data = []byte(tt.config)
			}
			p, err := New(data, clock.NewMock())
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want == "" && len(p.enforcers) == 0:
				t.Fatal("accepted with no limit")
			case tt.want != "" && err == nil:
				t.Fatalf("accepted, want %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}
