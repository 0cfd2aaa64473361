package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// loaders are the exported loaders, keyed by their fixture directory under testdata.
var loaders = map[string]func(path string) error{
	"admission":      func(p string) error { _, err := LoadAdmission(p); return err },
	"authentication": func(p string) error { _, err := LoadAuthentication(p); return err },
	"authorization":  func(p string) error { _, err := LoadAuthorization(p); return err },
	"encryption":     func(p string) error { _, err := LoadEncryption(p); return err },
	"tracing":        func(p string) error { _, err := LoadTracing(p); return err },
}

// fixtures lists the configuration files of testdata/<dir>/<validity>.
func fixtures(t *testing.T, dir, validity string) []string {
	t.Helper()
	var out []string
	for _, ext := range []string{"*.yaml", "*.json"} {
		m, err := filepath.Glob(filepath.Join("testdata", dir, validity, ext))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	if len(out) == 0 {
		t.Fatalf("no fixtures in testdata/%s/%s", dir, validity)
	}
	slices.Sort(out)
	return out
}

// wants reads the expected problems of an invalid fixture: "# want: path: reason" lines compare
// with Problem.String(), "# want-at: LINE: path: reason" lines also with the line. JSON fixtures,
// which cannot hold comments, keep these lines in FILE.want.
func wants(t *testing.T, path string) []string {
	t.Helper()
	src := path
	if strings.HasSuffix(path, ".json") {
		src = path + ".want"
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimPrefix(line, "# ")
		if strings.HasPrefix(line, "want: ") || strings.HasPrefix(line, "want-at: ") {
			out = append(out, line)
		}
	}
	return out
}

// render formats problems the way wants writes them, matching each want's form.
func render(probs []Problem, want []string) []string {
	out := make([]string, len(probs))
	for i, p := range probs {
		if i < len(want) && strings.HasPrefix(want[i], "want-at: ") {
			out[i] = fmt.Sprintf("want-at: %d: %s", p.Line, p)
		} else {
			out[i] = "want: " + p.String()
		}
	}
	return out
}

func TestValidFixturesLoad(t *testing.T) {
	for dir, load := range loaders {
		for _, f := range fixtures(t, dir, "valid") {
			t.Run(f, func(t *testing.T) {
				if err := load(f); err != nil {
					t.Fatalf("valid fixture refused:\n%v", err)
				}
			})
		}
	}
}

func TestInvalidFixturesReportEveryProblem(t *testing.T) {
	for dir, load := range loaders {
		for _, f := range fixtures(t, dir, "invalid") {
			t.Run(f, func(t *testing.T) {
				want := wants(t, f)
				if len(want) == 0 {
					t.Fatal("fixture declares no expected problem")
				}
				err := load(f)
				var fe *FileError
				if !errors.As(err, &fe) {
					t.Fatalf("got %v (%T), want a *FileError", err, err)
				}
				if fe.File != f {
					t.Errorf("error names file %q, want %q", fe.File, f)
				}
				if got := render(fe.Problems, want); !slices.Equal(got, want) {
					t.Errorf("problems differ\ngot:\n# %s\nwant:\n# %s", strings.Join(got, "\n# "), strings.Join(want, "\n# "))
				}
			})
		}
	}
}
