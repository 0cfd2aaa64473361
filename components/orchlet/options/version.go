package options

import (
	"fmt"
	"strconv"
	"strings"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	apiversion "k8s.io/apimachinery/pkg/version"
)

// ProductName opens the `--version` line, where Kubernetes prints its own name.
const ProductName = "orch"

// versionValue reads `--version`: true or raw ask to print and exit, false does nothing, vX.Y.Z sets the
// reported version, which must keep the build's major.minor.patch as Kubernetes requires.
type versionValue struct {
	build    *apiversion.Info
	printing string // "", "true" or "raw"
}

func (v *versionValue) Set(s string) error {
	if s == "raw" {
		v.printing = "raw"
		return nil
	}
	if strings.HasPrefix(s, "v") {
		return v.override(s)
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true, false, raw or vX.Y.Z")
	}
	v.printing = ""
	if b {
		v.printing = "true"
	}
	return nil
}

func (v *versionValue) override(s string) error {
	if s == v.build.GitVersion {
		return nil
	}
	want, err := utilversion.ParseSemantic(v.build.GitVersion)
	if err != nil {
		return fmt.Errorf("the build version %q cannot be overridden: %v", v.build.GitVersion, err)
	}
	got, err := utilversion.ParseSemantic(s)
	if err != nil {
		return err
	}
	if got.Major() != want.Major() || got.Minor() != want.Minor() || got.Patch() != want.Patch() {
		return fmt.Errorf("version %q must keep the build's major.minor.patch %d.%d.%d", s, want.Major(), want.Minor(), want.Patch())
	}
	v.build.GitVersion = s
	v.build.Major = strconv.FormatUint(uint64(got.Major()), 10)
	v.build.Minor = strconv.FormatUint(uint64(got.Minor()), 10)
	return nil
}

func (v *versionValue) String() string {
	if v.printing == "" {
		return "false"
	}
	return v.printing
}

func (v *versionValue) Type() string     { return "version" }
func (v *versionValue) IsBoolFlag() bool { return true }

// versionText is what `--version` (or `--version=raw`) prints.
func versionText(build apiversion.Info, printing string) string {
	if printing == "raw" {
		return fmt.Sprintf("%#v\n", build)
	}
	return fmt.Sprintf("%s %s\n", ProductName, build.GitVersion)
}
