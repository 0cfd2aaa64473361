package statefile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// testCheckpoint verifies when its checksum is its name's length.
type testCheckpoint struct {
	Name     string `json:"name"`
	Checksum uint32 `json:"checksum"`
}

func (c *testCheckpoint) Verified() bool { return c.Checksum == uint32(len(c.Name)) }

func TestRead(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, content string // content "" is no file; "/" a directory in its place
		found         bool
		err           error // nil: none; errAny: some error
	}{
		{name: "missing", found: false},
		{name: "verified", content: `{"name":"abc","checksum":3}`, found: true},
		{name: "corrupted", content: `{"name":"abc","checksum":4}`, found: true, err: ErrCorrupted},
		{name: "not JSON", content: `{"name":`, found: true, err: errAny},
		{name: "a directory", content: "/", err: errAny},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name)
			switch c.content {
			case "":
			case "/":
				if err := os.Mkdir(path, 0o700); err != nil {
					t.Fatal(err)
				}
			default:
				if err := Write(path, []byte(c.content)); err != nil {
					t.Fatal(err)
				}
			}
			var cp testCheckpoint
			found, err := Read(path, &cp)
			if found != c.found || (err == nil) != (c.err == nil) || (c.err != errAny && !errors.Is(err, c.err)) {
				t.Fatalf("found %v, err %v; want %v, %v", found, err, c.found, c.err)
			}
			if c.name == "verified" && cp.Name != "abc" {
				t.Errorf("read %+v", cp)
			}
		})
	}
}

var errAny = errors.New("any error")

// Sum is FNV-32a over the rendering, the checksum's type spelt as the kubelet's and the names
// given replaced: two values that render alike but for a replaced name sum alike.
func TestSum(t *testing.T) {
	type a struct{ Checksum uint32 }
	type b struct{ Checksum uint32 }
	if Sum(&a{}, "statefile.a", "state.x") != Sum(&b{}, "statefile.b", "state.x") {
		t.Error("the replaced names were not replaced")
	}
	if Sum(&a{}) == Sum(&b{}) {
		t.Error("two types' names summed alike")
	}
}
