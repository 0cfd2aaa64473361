package memorymanager

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The kubelet's own checkpoint fixture (state_checkpoint_test.go) verifies here: the checksum is
// the kubelet's, so a file either agent wrote is read by the other.
func TestCheckpointKubeletFixture(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, StateFile)
	fixture := `{
		"policyName":"static",
		"machineState":{"0":{"numberOfAssignments":0,"memoryMap":{"memory":{"total":2048,"systemReserved":512,"allocatable":1536,"reserved":512,"free":1024}},"cells":[]}},
		"entries":{"pod":{"container1":[{"numaAffinity":[0],"type":"memory","size":512}]}},
		"checksum": 4215593881
	}`
	if err := os.WriteFile(path, []byte(fixture), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := loadState(path, "static")
	if err != nil {
		t.Fatalf("the kubelet's checkpoint: %v", err)
	}
	if b := s.assignments["pod"]["container1"]; len(b) != 1 || b[0].Size != 512 || s.machine[0].MemoryMap["memory"].Free != 1024 {
		t.Errorf("restored %+v %+v", s.assignments, s.machine[0])
	}
	// Written back, the file verifies again with the same checksum.
	if err := s.save(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), `"checksum":4215593881`) {
		t.Errorf("rewritten: %s", data)
	}
	for _, tc := range []struct{ name, content, policy, want string }{
		{"corrupted", strings.Replace(fixture, "4215593881", "101010", 1), "static", "checkpoint is corrupted"},
		{"policy changed", fixture, "None", `configured policy "None" differs from state checkpoint policy "static"`},
		{"not JSON", "{", "static", "unexpected end of JSON input"},
	} {
		if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := loadState(path, tc.policy)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "please drain this node and delete the memory manager checkpoint file") {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// A fresh checkpoint, its entries empty and so left out of the file, verifies when read back:
// the kubelet renders the missing entries as an empty map, not as none.
func TestCheckpointEmptyEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), StateFile)
	if _, err := loadState(path, "None"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), "entries") {
		t.Errorf("empty entries written: %s", data)
	}
	if _, err := loadState(path, "None"); err != nil {
		t.Errorf("the fresh checkpoint %s: %v", data, err)
	}
}
