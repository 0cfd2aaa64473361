package options

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

func itoa(i int64) string { return strconv.FormatInt(i, 10) }
func tf(b bool) string    { return strconv.FormatBool(b) }

func kv(m map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return strings.Join(out, ",")
}

func kvb(m map[string]bool) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, fmt.Sprintf("%s=%t", k, m[k]))
	}
	return strings.Join(out, ",")
}

func kvs(m map[string][]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+strings.Join(m[k], "|"))
	}
	return strings.Join(out, ",")
}
