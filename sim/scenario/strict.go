package scenario

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	yamlv3 "go.yaml.in/yaml/v3"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"orch.io/orch/components/orchlet/options"
)

// decode reads a scenario file's YAML into s, strictly: keys are case-sensitive, and an unknown
// key comes back with its line and the keys expected there. lines locates later problems.
func decode(data []byte, s *Scenario) (lines lineIndex, err error) {
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(data, &root); err != nil {
		return nil, err
	}
	lines = lineIndex{}
	lines.add(&root, "", 0)
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	strict, err := sigsjson.UnmarshalStrict(j, s)
	var errs []error
	for _, se := range strict {
		var fp interface{ FieldPath() string }
		if !errors.As(se, &fp) {
			errs = append(errs, se)
			continue
		}
		path := fp.FieldPath()
		parent, key := splitPath(path)
		msg := "unknown key"
		if !strings.HasPrefix(se.Error(), "unknown field") {
			msg = "given twice"
		} else if keys := expectedKeys(parent); len(keys) > 0 {
			msg += "; expected " + oneOf(keys)
			if near := nearest(key, keys); near != "" {
				msg += " (did you mean " + near + "?)"
			}
		}
		errs = append(errs, lines.errorf(path, "%s", msg))
	}
	if err != nil {
		errs = append(errs, err)
	}
	return lines, errors.Join(errs...)
}

// lineIndex is the line of each field path of a YAML document ("timeline[2].at"), aliases
// followed once.
type lineIndex map[string]int

func (ix lineIndex) add(n *yamlv3.Node, path string, depth int) {
	if n.Kind == yamlv3.AliasNode && n.Alias != nil && depth < 32 {
		n = n.Alias
	}
	switch n.Kind {
	case yamlv3.DocumentNode:
		for _, c := range n.Content {
			ix.add(c, path, depth+1)
		}
	case yamlv3.SequenceNode:
		for i, c := range n.Content {
			p := path + "[" + strconv.Itoa(i) + "]"
			ix[p] = c.Line
			ix.add(c, p, depth+1)
		}
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := n.Content[i].Value
			if path != "" {
				p = path + "." + p
			}
			if _, seen := ix[p]; !seen {
				ix[p] = n.Content[i].Line
			}
			ix.add(n.Content[i+1], p, depth+1)
		}
	}
}

// line is the line of path, or of its nearest ancestor the document has (0 for none).
func (ix lineIndex) line(path string) int {
	for path != "" {
		if l, ok := ix[path]; ok {
			return l
		}
		path, _ = splitPath(path)
	}
	return 0
}

// errorf is a problem at path: "line N: path: message" (located makes it "file:N: path: message").
func (ix lineIndex) errorf(path, format string, args ...any) error {
	msg := path + ": " + fmt.Sprintf(format, args...)
	if l := ix.line(path); l > 0 {
		msg = fmt.Sprintf("line %d: %s", l, msg)
	}
	return errors.New(msg)
}

// splitPath cuts a field path's last element off: "timeline[2].at" is "timeline[2]" and "at",
// "timeline[2]" is "timeline" and "[2]".
func splitPath(path string) (parent, last string) {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return "", path
	}
	if path[i] == '.' {
		return path[:i], path[i+1:]
	}
	return path[:i], path[i:]
}

var pathElems = regexp.MustCompile(`\[\d+\]|[^.\[]+`)

// expectedKeys are the keys a scenario takes at path, from its Go types' JSON names.
func expectedKeys(path string) []string {
	t := reflect.TypeOf(Scenario{})
	for _, e := range pathElems.FindAllString(path, -1) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case strings.HasPrefix(e, "["):
			if t.Kind() != reflect.Slice {
				return nil
			}
			t = t.Elem()
		case t.Kind() == reflect.Map:
			t = t.Elem()
		case t.Kind() == reflect.Struct:
			f, ok := fieldByJSON(t, e)
			if !ok {
				return nil
			}
			t = f.Type
		default:
			return nil
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	return jsonKeys(t)
}

// jsonKeys are the JSON names of a struct's fields, in their order.
func jsonKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		if name := jsonName(t.Field(i)); name != "" {
			keys = append(keys, name)
		}
	}
	return keys
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" || !f.IsExported() {
		return ""
	}
	if name == "" {
		return f.Name
	}
	return name
}

func fieldByJSON(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if jsonName(t.Field(i)) == name {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

// oneOf lists words as "a, b or c".
func oneOf(words []string) string {
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// nearest is the candidate closest to word when it is close enough to be a slip of the keyboard
// or of the case: at most a third of the word's letters apart.
func nearest(word string, candidates []string) string {
	best, bestD := "", len(word)/3+1
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(word), strings.ToLower(c)); d < bestD || d == 0 {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance counts the insertions, deletions, substitutions and swaps of neighbours that turn
// a into b.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// orchletFlags are the orchlet's option names, read from its help, for suggesting the one meant.
var orchletFlags = sync.OnceValue(func() []string {
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9-]+)`).FindAllStringSubmatch(options.Usage(), -1) {
		names = append(names, "--"+m[1])
	}
	slices.Sort(names)
	return slices.Compact(names)
})

// tempConfig is the name of the file a node's config is written to, which means nothing to the
// scenario's author.
var tempConfig = regexp.MustCompile(`--config \S*orchsim-config-\d+\.yaml: `)

var unknownFlag = regexp.MustCompile(`unknown flag: (--[a-z0-9-]+)`)

// optionHint adds to an orchlet option error the option meant, when one is near the unknown one.
func optionHint(err error) string {
	msg := tempConfig.ReplaceAllString(err.Error(), "")
	m := unknownFlag.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	if near := nearest(m[1], orchletFlags()); near != "" && near != m[1] {
		return msg + " (did you mean " + near + "?)"
	}
	return msg + " (orchlet --help lists the options)"
}

var lineMark = regexp.MustCompile(`^line (\d+): `)

// located puts the file in front of each problem of err, one a line, as "file:line: problem".
func located(file string, err error) error {
	var out []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if m := lineMark.FindStringSubmatch(l); m != nil {
			out = append(out, file+":"+m[1]+": "+l[len(m[0]):])
		} else {
			out = append(out, file+": "+l)
		}
	}
	return errors.New(strings.Join(out, "\n"))
}
