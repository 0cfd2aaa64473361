package target

import (
	"regexp"
	"strings"
)

// HelpEntry is one option as the agent's help prints it.
type HelpEntry struct {
	Type    string // the type word after the option name; empty for a boolean
	Default string // the text of "(default X)", unquoted; empty when none is shown
	Text    string // the whole entry, continuation lines joined
}

// Gate is one feature gate as the help lists it.
type Gate struct {
	Stage   string
	Default string
}

// Help is the agent's parsed --help.
type Help struct {
	Options map[string]*HelpEntry // by long name without dashes
	Gates   map[string]Gate
}

var (
	// helpOption matches the first line of an option: "  -v, --v Level   text" or "  --address string   text".
	helpOption  = regexp.MustCompile(`^\s+(?:-[A-Za-z], )?--([A-Za-z0-9-]+)(?: (\S+))?(?:\s{2,}(.*))?$`)
	helpDefault = regexp.MustCompile(`\(default (.*?)\)(?:\s|$)`)
	helpGate    = regexp.MustCompile(`^\s+([A-Za-z0-9]+)=true\|false \((ALPHA|BETA|GA|DEPRECATED) - default=(true|false)\)`)
)

// parseHelp reads pflag-style help text.
func parseHelp(text string) *Help {
	h := &Help{Options: map[string]*HelpEntry{}, Gates: map[string]Gate{}}
	var cur *HelpEntry
	for _, line := range strings.Split(text, "\n") {
		if m := helpGate.FindStringSubmatch(line); m != nil {
			h.Gates[m[1]] = Gate{Stage: m[2], Default: m[3]}
		}
		if m := helpOption.FindStringSubmatch(line); m != nil {
			cur = &HelpEntry{Type: m[2], Text: m[3]}
			h.Options[m[1]] = cur
			continue
		}
		switch {
		case strings.TrimSpace(line) == "" || !strings.HasPrefix(line, " "):
			cur = nil
		case cur != nil:
			cur.Text += " " + strings.TrimSpace(line)
		}
	}
	for _, e := range h.Options {
		if ms := helpDefault.FindAllStringSubmatch(e.Text, -1); ms != nil {
			e.Default = strings.Trim(ms[len(ms)-1][1], `"[]`)
		}
	}
	return h
}
