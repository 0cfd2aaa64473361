package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// maxFileSize bounds what is read, so a wrong path (a device, a huge log) fails fast instead of
// exhausting memory; real configuration files are a few kilobytes.
const maxFileSize = 1 << 20

// document is a configuration file's bytes as JSON, plus its YAML node tree for locating lines.
type document struct {
	json []byte
	root *yamlv3.Node
	// keys indexes the keys of each mapping node once it is searched, so locating many problems
	// in a large mapping stays linear.
	keys map[*yamlv3.Node]map[string]int
}

// readFile reads a configuration file, refusing ones larger than maxFileSize.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, maxFileSize+1)); err != nil {
		return nil, err
	}
	if buf.Len() > maxFileSize {
		return nil, fmt.Errorf("file is larger than %d bytes", maxFileSize)
	}
	return buf.Bytes(), nil
}

// parse converts YAML or JSON to JSON. Duplicate keys come back as problems alongside a document
// in which the last value won, so the caller can still report unknown fields in the same run. The
// YAML node tree is kept so that later problems carry the line of the field they concern.
func parse(data []byte) (*document, []Problem) {
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(data, &root); err != nil {
		return nil, []Problem{yamlProblem(err)}
	}
	dups := duplicateKeys(&root, nil)
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, append(dups, yamlProblem(err))
	}
	return &document{json: j, root: &root}, dups
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

// yamlProblem turns a YAML parser error into a problem, moving its line number into Line.
func yamlProblem(err error) Problem {
	msg := oneLine(strings.TrimPrefix(err.Error(), "error converting YAML to JSON: "))
	msg = strings.TrimPrefix(msg, "yaml: unmarshal errors: ")
	p := Problem{Detail: msg}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		p.Line, _ = strconv.Atoi(m[1])
		p.Detail = "yaml: " + msg[len(m[0]):]
	}
	return p
}

// duplicateKeys reports every mapping key that appears twice in the same mapping. Aliases are not
// followed, so a document built from nested aliases cannot blow up the walk.
func duplicateKeys(n *yamlv3.Node, path []string) []Problem {
	var out []Problem
	switch n.Kind {
	case yamlv3.DocumentNode, yamlv3.SequenceNode:
		for i, c := range n.Content {
			p := path
			if n.Kind == yamlv3.SequenceNode {
				p = append(path[:len(path):len(path)], "["+strconv.Itoa(i)+"]")
			}
			out = append(out, duplicateKeys(c, p)...)
		}
	case yamlv3.MappingNode:
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := append(path[:len(path):len(path)], k.Value)
			if first, dup := seen[k.Value]; dup {
				out = append(out, Problem{
					Line:   k.Line,
					Field:  joinPath(p),
					Detail: fmt.Sprintf("Duplicate value: key %q already set at line %d", k.Value, first),
				})
				continue
			}
			seen[k.Value] = k.Line
			out = append(out, duplicateKeys(v, p)...)
		}
	}
	return out
}

func joinPath(elems []string) string {
	var b strings.Builder
	for i, e := range elems {
		if i > 0 && !strings.HasPrefix(e, "[") {
			b.WriteByte('.')
		}
		b.WriteString(e)
	}
	return b.String()
}

// decodeStrict decodes the document into obj, reporting unknown fields, duplicate fields and type
// mismatches with their field paths.
func decodeStrict(doc *document, obj any) []Problem {
	strictErrs, err := json.UnmarshalStrict(doc.json, obj)
	var out []Problem
	if err != nil {
		out = append(out, decodeProblem(doc, err))
	}
	for _, se := range strictErrs {
		p := Problem{Detail: se.Error()}
		var fp interface{ FieldPath() string }
		if errors.As(se, &fp) {
			p.Field = fp.FieldPath()
			p.Line = doc.line(p.Field)
			if strings.HasPrefix(se.Error(), "unknown field") {
				p.Detail = "Forbidden: unknown field"
			} else {
				p.Detail = "Duplicate value: duplicate field"
			}
		}
		out = append(out, p)
	}
	return out
}

var typeError = regexp.MustCompile(`^json: cannot unmarshal (.+) into Go struct field [^ ]*?\.([^ .]+(?:\.[^ .]+)*) of type (.+)$`)

// decodeProblem describes a type mismatch or a value its type refused (such as a bad duration).
// The decoder names the field without list indices, so the line is that of the deepest match.
func decodeProblem(doc *document, err error) Problem {
	msg := oneLine(err.Error())
	if m := typeError.FindStringSubmatch(msg); m != nil {
		return Problem{
			Field:  m[2],
			Line:   doc.line(m[2]),
			Detail: fmt.Sprintf("Invalid value: %s: must be of type %s", m[1], m[3]),
		}
	}
	p := Problem{Detail: msg}
	// A value its type refused (a duration, say) comes without a path; the message quotes the
	// value, so find where the document holds it.
	if m := lastQuoted.FindStringSubmatch(msg); m != nil {
		if v, err := strconv.Unquote(m[1]); err == nil {
			if path, line, ok := findScalar(doc.root, v, nil); ok {
				p = Problem{Field: path, Line: line, Detail: fmt.Sprintf("Invalid value: %q: %s", v, msg)}
			}
		}
	}
	return p
}

var lastQuoted = regexp.MustCompile(`.*("(?:[^"\\]|\\.)*")`)

// findScalar finds the first mapping value or sequence element equal to value, without following
// aliases, and returns its field path and line.
func findScalar(n *yamlv3.Node, value string, path []string) (string, int, bool) {
	switch n.Kind {
	case yamlv3.ScalarNode:
		if n.Value == value && len(path) > 0 {
			return joinPath(path), n.Line, true
		}
	case yamlv3.DocumentNode, yamlv3.SequenceNode:
		for i, c := range n.Content {
			p := path
			if n.Kind == yamlv3.SequenceNode {
				p = append(path[:len(path):len(path)], "["+strconv.Itoa(i)+"]")
			}
			if f, l, ok := findScalar(c, value, p); ok {
				return f, l, true
			}
		}
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := append(path[:len(path):len(path)], n.Content[i].Value)
			if f, l, ok := findScalar(n.Content[i+1], value, p); ok {
				return f, l, true
			}
		}
	}
	return "", 0, false
}

var pathElem = regexp.MustCompile(`[^.\[\]]+|\[\d+\]`)

// line returns the line of the deepest node of the YAML tree the field path reaches, so a missing
// field is reported at its parent; 0 when the path reaches nothing.
func (d *document) line(path string) int {
	if d == nil || d.root == nil || len(d.root.Content) == 0 {
		return 0
	}
	n := d.root.Content[0]
	line := 0
	for _, e := range pathElem.FindAllString(path, -1) {
		next, keyLine := d.child(n, e)
		if next == nil {
			return line
		}
		n, line = next, keyLine
	}
	return line
}

// child finds a mapping value by key, or a sequence element by "[i]", and the line to report it
// at: a key's own line, since a value may be a block starting lines later.
func (d *document) child(n *yamlv3.Node, elem string) (*yamlv3.Node, int) {
	switch n.Kind {
	case yamlv3.MappingNode:
		if d.keys == nil {
			d.keys = map[*yamlv3.Node]map[string]int{}
		}
		idx, ok := d.keys[n]
		if !ok {
			idx = map[string]int{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				if _, seen := idx[n.Content[i].Value]; !seen {
					idx[n.Content[i].Value] = i
				}
			}
			d.keys[n] = idx
		}
		if i, ok := idx[elem]; ok {
			return n.Content[i+1], n.Content[i].Line
		}
	case yamlv3.SequenceNode:
		if strings.HasPrefix(elem, "[") {
			i, err := strconv.Atoi(strings.Trim(elem, "[]"))
			if err == nil && i >= 0 && i < len(n.Content) {
				return n.Content[i], n.Content[i].Line
			}
		}
	}
	return nil, 0
}
