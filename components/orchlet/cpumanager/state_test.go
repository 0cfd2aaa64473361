package cpumanager

import "testing"

// TestChecksumIsKubelets: the checksums of checkpoints from Kubernetes' own tests.
func TestChecksumIsKubelets(t *testing.T) {
	cases := []struct {
		cp   checkpoint
		want uint32
	}{
		{checkpoint{PolicyName: "none", DefaultCPUSet: "4-6", Entries: map[string]map[string]string{}}, 354655845},
		{checkpoint{PolicyName: "none", DefaultCPUSet: "1-3", Entries: map[string]map[string]string{"pod": {"container1": "4-6", "container2": "1-3"}}}, 3610638499},
	}
	for _, tc := range cases {
		if got := tc.cp.sum(); got != tc.want {
			t.Errorf("%+v: checksum %d, want %d", tc.cp, got, tc.want)
		}
	}
}
