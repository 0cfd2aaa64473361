package statefile

import (
	"encoding/json"
	"errors"
	"hash/fnv"
	"io/fs"
	"os"
	"strings"

	"github.com/davecgh/go-spew/spew"
)

// ErrCorrupted is a checkpoint whose checksum is not its content's, in the kubelet's words.
var ErrCorrupted = errors.New("checkpoint is corrupted")

// Checkpoint is a state file's content, which knows whether its checksum verifies.
type Checkpoint interface {
	Verified() bool
}

// Read reads the checkpoint at path into cp and verifies it, as the kubelet's checkpoint manager's
// GetCheckpoint: found is false when there is none; an error when it cannot be read, is not its
// JSON, or does not verify (ErrCorrupted).
func Read(path string, cp Checkpoint) (found bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(data, cp); err != nil {
		return true, err
	}
	if !cp.Verified() {
		return true, ErrCorrupted
	}
	return true, nil
}

// Sum is the kubelet's checksum of a checkpoint (its checksum.New): FNV-32a over go-spew's
// rendering of cp, whose own checksum the caller has zeroed, with the checksum's type spelt as the
// kubelet's and each of oldnew's old names (this package's types) replaced by the new (the
// kubelet's), so either agent verifies the other's file.
func Sum(cp any, oldnew ...string) uint32 {
	printer := spew.ConfigState{Indent: " ", SortKeys: true, DisableMethods: true, SpewKeys: true}
	s := printer.Sprintf("%#v", cp)
	s = strings.NewReplacer(append([]string{"Checksum:(uint32)", "Checksum:(checksum.Checksum)"}, oldnew...)...).Replace(s)
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}
