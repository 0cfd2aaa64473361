package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// maxParseTime flags an input that makes a loader crawl: config files are tiny, so seconds mean a
// hang in the making, not a slow machine.
const maxParseTime = 5 * time.Second

// fuzzParse seeds the fuzzer with every fixture of dir and checks that parse never panics, never
// hangs, and returns either a configuration or a *FileError listing at least one problem.
func fuzzParse[T any](f *testing.F, dir string, parse func(name string, data []byte) (*T, error)) {
	for _, validity := range []string{"valid", "invalid"} {
		for _, ext := range []string{"*.yaml", "*.json"} {
			files, err := filepath.Glob(filepath.Join("testdata", dir, validity, ext))
			if err != nil {
				f.Fatal(err)
			}
			for _, file := range files {
				data, err := os.ReadFile(file)
				if err != nil {
					f.Fatal(err)
				}
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		start := time.Now()
		cfg, err := parse("fuzz/input.yaml", data)
		if d := time.Since(start); d > maxParseTime {
			t.Fatalf("parse took %v", d)
		}
		if err == nil {
			if cfg == nil {
				t.Fatal("no error and no configuration")
			}
			return
		}
		var fe *FileError
		if !errors.As(err, &fe) || len(fe.Problems) == 0 {
			t.Fatalf("error %v (%T) is not a FileError with problems", err, err)
		}
		for _, line := range strings.Split(fe.Error(), "\n") {
			if !strings.HasPrefix(line, "fuzz/input.yaml") {
				t.Fatalf("error line %q does not name the file", line)
			}
		}
	})
}

func FuzzParseAuthentication(f *testing.F) { fuzzParse(f, "authentication", ParseAuthentication) }
func FuzzParseAuthorization(f *testing.F)  { fuzzParse(f, "authorization", ParseAuthorization) }
func FuzzParseEncryption(f *testing.F)     { fuzzParse(f, "encryption", ParseEncryption) }
func FuzzParseAdmission(f *testing.F)      { fuzzParse(f, "admission", ParseAdmission) }
func FuzzParseTracing(f *testing.F)        { fuzzParse(f, "tracing", ParseTracing) }
