package featuregates

import (
	"strings"
	"testing"
)

func TestKnownMatchesSpecCountsAndSamples(t *testing.T) {
	counts := map[Spec]int{}
	for _, s := range Known() {
		counts[s]++
	}
	want := map[Spec]int{{Alpha, false}: 55, {Beta, false}: 14, {Beta, true}: 60}
	for spec, n := range want {
		if counts[spec] != n {
			t.Errorf("%v: %d gates, want %d", spec, counts[spec], n)
		}
	}
	samples := map[string]Spec{
		"AllAlpha": {Alpha, false}, "AllBeta": {Beta, false}, "QOSReserved": {Alpha, false},
		"LoggingAlphaOptions": {Alpha, false}, "RotateOrchletServerCertificate": {Beta, true},
		"ImageVolume": {Beta, false}, "AltGracefulNodeShutdown": {Beta, true},
	}
	for name, want := range samples {
		if got := Known()[name]; got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

func TestEnabled(t *testing.T) {
	tests := []struct {
		name string
		set  map[string]bool
		gate string
		want bool
	}{
		{"alpha default off", nil, "QOSReserved", false},
		{"beta default on", nil, "GracefulNodeShutdown", true},
		{"beta default off", nil, "ImageVolume", false},
		{"explicit on", map[string]bool{"QOSReserved": true}, "QOSReserved", true},
		{"explicit off", map[string]bool{"GracefulNodeShutdown": false}, "GracefulNodeShutdown", false},
		{"AllAlpha turns alpha on", map[string]bool{"AllAlpha": true}, "EventedPLEG", true},
		{"AllAlpha leaves beta", map[string]bool{"AllAlpha": true}, "ImageVolume", false},
		{"explicit beats AllAlpha", map[string]bool{"AllAlpha": true, "EventedPLEG": false}, "EventedPLEG", false},
		{"AllBeta off turns default-on beta off", map[string]bool{"AllBeta": false}, "GracefulNodeShutdown", false},
		{"AllBeta on turns default-off beta on", map[string]bool{"AllBeta": true}, "ImageVolume", true},
		{"AllBeta leaves alpha", map[string]bool{"AllBeta": true}, "QOSReserved", false},
		{"unknown is off", nil, "NoSuchGate", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := New(tt.set)
			if err != nil {
				t.Fatal(err)
			}
			if got := g.Enabled(tt.gate); got != tt.want {
				t.Errorf("Enabled(%s) = %t, want %t", tt.gate, got, tt.want)
			}
		})
	}
}

func TestNewRefusesUnknownNames(t *testing.T) {
	_, err := New(map[string]bool{"Nope": true, "AlsoNope": false, "QOSReserved": true})
	if err == nil || !strings.Contains(err.Error(), `"Nope"`) || !strings.Contains(err.Error(), `"AlsoNope"`) {
		t.Fatalf("err = %v, want both unknown names", err)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]bool
		wantErr string
	}{
		{"QOSReserved=true", map[string]bool{"QOSReserved": true}, ""},
		{"QOSReserved=true, AllBeta=false", map[string]bool{"QOSReserved": true, "AllBeta": false}, ""},
		{"", map[string]bool{}, ""},
		{"Nope=true", nil, `unrecognized feature gate "Nope"`},
		{"QOSReserved=maybe", nil, `invalid value "maybe" for feature gate "QOSReserved"`},
		{"QOSReserved", nil, `missing bool value for "QOSReserved"`},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Parse(%q) err = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || len(got) != len(tt.want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("Parse(%q)[%s] = %t, want %t", tt.in, k, got[k], v)
			}
		}
	}
}

func TestMapValueMergesPerGate(t *testing.T) {
	m := map[string]bool{"QOSReserved": true, "ImageVolume": true}
	v := NewMapValue(&m)
	if err := v.Set("ImageVolume=false,EventedPLEG=true"); err != nil {
		t.Fatal(err)
	}
	if want := "EventedPLEG=true,ImageVolume=false,QOSReserved=true"; v.String() != want {
		t.Errorf("String() = %q, want %q", v.String(), want)
	}
	if err := v.Set("Bad=true"); err == nil {
		t.Error("unknown gate accepted")
	}
}

func TestUsageListsEveryGateWithStageAndDefault(t *testing.T) {
	u := Usage()
	if len(u) != len(known) {
		t.Fatalf("%d lines, want %d", len(u), len(known))
	}
	joined := strings.Join(u, "\n")
	for _, want := range []string{"AllAlpha=true|false (ALPHA - default=false)", "WatchList=true|false (BETA - default=true)"} {
		if !strings.Contains(joined, want) {
			t.Errorf("usage lacks %q", want)
		}
	}
}
