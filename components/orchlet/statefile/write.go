package statefile

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// Write replaces path with data through a temporary file beside it, making its directory (0700)
// first: a rename within a directory is atomic, a rewrite in place is not.
func Write(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// WriteJSON writes cp as JSON with Write.
func WriteJSON(path string, cp any) error {
	data, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	return Write(path, data)
}
