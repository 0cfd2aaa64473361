package conformance

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// nChars lets a feature file say "129 characters" instead of spelling them out.
var nChars = regexp.MustCompile(`^(\d+) characters$`)

// parseValue reads a value written in a feature file: JSON, or "<n> characters".
func parseValue(s string) (any, error) {
	if m := nChars.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		return strings.Repeat("x", n), nil
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("value %s is neither JSON nor \"<n> characters\": %w", s, err)
	}
	return v, nil
}

// pathElem is one step of a path such as jwt[0].issuer.url: a key, or an index when key is "".
type pathElem struct {
	key   string
	index int
}

var (
	pathPart  = regexp.MustCompile(`^([^\[\]]*)((?:\[\d+\])*)$`)
	pathIndex = regexp.MustCompile(`\d+`)
)

func splitPath(path string) ([]pathElem, error) {
	var out []pathElem
	for _, part := range strings.Split(path, ".") {
		m := pathPart.FindStringSubmatch(part)
		if m == nil {
			return nil, fmt.Errorf("bad path %q", path)
		}
		if m[1] != "" {
			out = append(out, pathElem{key: m[1]})
		}
		for _, idx := range pathIndex.FindAllString(m[2], -1) {
			i, _ := strconv.Atoi(idx)
			out = append(out, pathElem{index: i})
		}
	}
	return out, nil
}

// getPath reads a path of a decoded JSON value.
func getPath(v any, path string) (any, bool) {
	elems, err := splitPath(path)
	if err != nil {
		return nil, false
	}
	for _, e := range elems {
		switch c := v.(type) {
		case map[string]any:
			if e.key == "" {
				return nil, false
			}
			var ok bool
			if v, ok = c[e.key]; !ok {
				return nil, false
			}
		case []any:
			if e.key != "" || e.index >= len(c) {
				return nil, false
			}
			v = c[e.index]
		default:
			return nil, false
		}
	}
	return v, true
}

// setPath sets a path, creating maps, and list items up to the index, on the way.
func setPath(root map[string]any, path string, value any) error {
	elems, err := splitPath(path)
	if err != nil {
		return err
	}
	var set func(cur any, i int) (any, error)
	set = func(cur any, i int) (any, error) {
		if i == len(elems) {
			return value, nil
		}
		e := elems[i]
		if e.key != "" {
			m, ok := cur.(map[string]any)
			if !ok {
				m = map[string]any{}
			}
			child, err := set(m[e.key], i+1)
			m[e.key] = child
			return m, err
		}
		l, _ := cur.([]any)
		for len(l) <= e.index {
			l = append(l, map[string]any{})
		}
		child, err := set(l[e.index], i+1)
		l[e.index] = child
		return l, err
	}
	_, err = set(root, 0)
	return err
}

// removePath deletes the last key of a path, when the path exists.
func removePath(root map[string]any, path string) {
	i := strings.LastIndex(path, ".")
	parent, key := any(root), path
	if i >= 0 {
		var ok bool
		if parent, ok = getPath(root, path[:i]); !ok {
			return
		}
		key = path[i+1:]
	}
	if m, ok := parent.(map[string]any); ok {
		delete(m, key)
	}
}

// sameJSON compares two values as JSON does, so 1 and 1.0 are equal.
func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var na, nb any
	_ = json.Unmarshal(ja, &na)
	_ = json.Unmarshal(jb, &nb)
	return reflect.DeepEqual(na, nb)
}
