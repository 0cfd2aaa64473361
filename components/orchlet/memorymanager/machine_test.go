package memorymanager

import (
	"reflect"
	"testing"
	"testing/fstest"
)

// A two-node layout as sysfs shows it: MemTotal in kB, each huge page pool's count.
func TestDiscover(t *testing.T) {
	fsys := fstest.MapFS{
		"node0/meminfo": {Data: []byte("Node 0 MemTotal:       4194304 kB\nNode 0 MemFree:        1000 kB\n")},
		"node0/hugepages/hugepages-2048kB/nr_hugepages":    {Data: []byte("4\n")},
		"node0/hugepages/hugepages-1048576kB/nr_hugepages": {Data: []byte("1\n")},
		"node1/meminfo": {Data: []byte("Node 1 MemTotal:       2097152 kB\n")},
		"possible":      {Data: []byte("0-1\n")},
	}
	got, err := Discover(fsys)
	if err != nil {
		t.Fatal(err)
	}
	want := []Node{
		{ID: 0, Memory: 4 * gi, HugePages: []HugePages{{PageSizeKiB: 2048, NumPages: 4}, {PageSizeKiB: 1 << 20, NumPages: 1}}},
		{ID: 1, Memory: 2 * gi},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%+v, want %+v", got, want)
	}
	if _, err := Discover(fstest.MapFS{"node0/hugepages/hugepages-2048kB/nr_hugepages": {Data: []byte("4")}}); err == nil {
		t.Error("a node without meminfo was read")
	}
}
