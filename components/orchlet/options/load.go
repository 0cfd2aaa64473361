package options

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"orch.io/orch/components/apis/orchlet/v1beta1"
)

// dropInSuffix marks the files of --config-dir that are read.
const dropInSuffix = ".conf"

// loadFiles decodes the --config file and then each drop-in over cfg. It returns the top-level fields
// the files set, for defaults that depend on whether a field was given.
func loadFiles(cfg *v1beta1.OrchletConfiguration, file, dir string) (map[string]bool, error) {
	set := map[string]bool{}
	if file != "" {
		if err := loadFile(cfg, file, set); err != nil {
			return nil, fmt.Errorf("--config %s: %w", file, err)
		}
	}
	if dir == "" {
		return set, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("--config-dir %s: %w", dir, err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), dropInSuffix) {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	for _, name := range names {
		path := filepath.Join(dir, name)
		if err := loadFile(cfg, path, set); err != nil {
			return nil, fmt.Errorf("--config-dir drop-in %s: %w", path, err)
		}
	}
	return set, nil
}

// loadFile decodes one file over cfg. Relative paths the file sets are taken relative to the file's
// directory, as Kubernetes' kubelet takes them, so a file means the same from any working directory.
// The file's top-level fields are added to set.
func loadFile(cfg *v1beta1.OrchletConfiguration, path string, set map[string]bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	before := pathFields(cfg)
	old := make([]string, len(before))
	for i, p := range before {
		old[i] = *p
	}
	if err := v1beta1.DecodeInto(data, cfg); err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := yaml.Unmarshal(data, &fields); err != nil {
		return err
	}
	for name := range fields {
		set[name] = true
	}
	base := filepath.Dir(path)
	for i, p := range pathFields(cfg) {
		if *p != old[i] && *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(base, *p)
		}
	}
	return nil
}

// pathFields are the file paths a configuration file names.
func pathFields(c *v1beta1.OrchletConfiguration) []*string {
	return []*string{
		&c.StaticPodPath,
		&c.Authentication.X509.ClientCAFile,
		&c.TLSCertFile,
		&c.TLSPrivateKeyFile,
		&c.ResolverConfig,
	}
}
