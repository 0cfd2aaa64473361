// Package typeschema cuts, from the structured-merge-diff schema of every Kubernetes type that
// client-go's apply configurations carry, the types orch-apiserver's kinds reach: linking and
// parsing the whole of it cost orch-apiserver 17 MB of binary and 13 MiB resident once it had
// recorded one managedFields.
package typeschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// Roots are the OpenAPI names of the types orch-apiserver's stores type their objects with (a
// strategy's SchemaType, else its New), and the untyped entries structured-merge-diff falls back
// on for fields without a schema.
var Roots = []string{
	"io.k8s.api.certificates.v1.CertificateSigningRequest",
	"io.k8s.api.coordination.v1.Lease",
	"io.k8s.api.core.v1.ConfigMap",
	"io.k8s.api.core.v1.Event",
	"io.k8s.api.core.v1.Namespace",
	"io.k8s.api.core.v1.Node",
	"io.k8s.api.core.v1.Pod",
	"io.k8s.api.core.v1.Secret",
	"io.k8s.api.core.v1.ServiceAccount",
	"io.k8s.api.events.v1.Event",
	"io.k8s.api.rbac.v1.ClusterRole",
	"io.k8s.api.rbac.v1.ClusterRoleBinding",
	"io.k8s.api.rbac.v1.Role",
	"io.k8s.api.rbac.v1.RoleBinding",
	"__untyped_atomic_",
	"__untyped_deduced_",
}

const (
	clientGo = "k8s.io/client-go"
	// schemaFile holds the full schema, as the string literal of var schemaVar.
	schemaFile = "applyconfigurations/internal/internal.go"
	schemaVar  = "schemaYAML"
)

// Generate returns the trimmed schema of Roots, cut from the client-go that the go.mod of the
// module around the working directory requires.
func Generate() ([]byte, error) {
	dir, version, err := clientGoModule()
	if err != nil {
		return nil, err
	}
	full, err := FullSchema(filepath.Join(dir, schemaFile))
	if err != nil {
		return nil, err
	}
	return Trim(full, Roots, clientGo+" "+version)
}

// clientGoModule finds client-go's source in the module cache with the go command, which
// resolves the version go.mod requires.
func clientGoModule() (dir, version string, err error) {
	cmd := exec.Command("go", "list", "-m", "-json", clientGo)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("go list -m %s: %w: %s", clientGo, err, stderr.Bytes())
	}
	var m struct{ Dir, Version string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", "", fmt.Errorf("go list -m %s: %w", clientGo, err)
	}
	if m.Dir == "" {
		return "", "", fmt.Errorf("%s %s is not in the module cache: run go mod download %s", clientGo, m.Version, clientGo)
	}
	return m.Dir, m.Version, nil
}

// FullSchema reads the schema YAML out of the Go file that client-go generates it into: the
// package is internal, so it is read as source rather than imported.
func FullSchema(path string) ([]byte, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.VAR {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if name.Name != schemaVar || i >= len(vs.Values) {
					continue
				}
				// typed.YAMLObject(`...`)
				call, ok := vs.Values[i].(*ast.CallExpr)
				if !ok || len(call.Args) != 1 {
					return nil, fmt.Errorf("%s: %s is not a conversion of one string literal", path, schemaVar)
				}
				lit, ok := call.Args[0].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return nil, fmt.Errorf("%s: %s is not a conversion of one string literal", path, schemaVar)
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					return nil, fmt.Errorf("%s: %s: %w", path, schemaVar, err)
				}
				return []byte(s), nil
			}
		}
	}
	return nil, fmt.Errorf("%s: no var %s", path, schemaVar)
}

// Trim keeps, of full, the types reachable from roots, each as full spells it and in full's
// order, under a header naming source.
func Trim(full []byte, roots []string, source string) ([]byte, error) {
	p, err := typed.NewParser(typed.YAMLObject(full))
	if err != nil {
		return nil, fmt.Errorf("parsing the schema of %s: %w", source, err)
	}
	keep := map[string]bool{}
	var walk func(smdschema.TypeRef) error
	var visit func(string) error
	walkAtom := func(a smdschema.Atom) error {
		if a.Map != nil {
			for _, f := range a.Map.Fields {
				if err := walk(f.Type); err != nil {
					return err
				}
			}
			if err := walk(a.Map.ElementType); err != nil {
				return err
			}
		}
		if a.List != nil {
			return walk(a.List.ElementType)
		}
		return nil
	}
	walk = func(r smdschema.TypeRef) error {
		if r.NamedType != nil {
			return visit(*r.NamedType)
		}
		return walkAtom(r.Inlined)
	}
	visit = func(name string) error {
		if keep[name] {
			return nil
		}
		def, ok := p.Schema.FindNamedType(name)
		if !ok {
			return fmt.Errorf("the schema of %s has no type %s", source, name)
		}
		keep[name] = true
		return walkAtom(def.Atom)
	}
	for _, r := range roots {
		if err := visit(r); err != nil {
			return nil, err
		}
	}

	// Cut full's text rather than marshal the kept types again, which would spell them otherwise.
	const typeStart = "\n- name: "
	body, ok := bytes.CutPrefix(full, []byte("types:"))
	if !ok {
		//lint:ignore ST1005 the colon is the key the schema must begin with
		return nil, fmt.Errorf("the schema of %s does not begin with types:", source)
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "# Code generated by go generate (internal/typeschema/gen); DO NOT EDIT.\n")
	fmt.Fprintf(&out, "# The types of %s's apply configurations reachable from:\n", source)
	for _, r := range roots {
		fmt.Fprintf(&out, "#   %s\n", r)
	}
	out.WriteString("types:")
	kept := 0
	for len(body) > 0 {
		if !bytes.HasPrefix(body, []byte(typeStart)) {
			return nil, fmt.Errorf("the schema of %s has text between types: %.40q", source, body)
		}
		end := bytes.Index(body[1:], []byte(typeStart)) + 1
		if end == 0 {
			end = len(body)
		}
		block := body[:end]
		name, _, _ := strings.Cut(string(block[len(typeStart):]), "\n")
		if keep[name] {
			out.Write(block)
			kept++
		}
		body = body[end:]
	}
	if kept != len(keep) {
		return nil, fmt.Errorf("the schema of %s: cut %d types of the %d reachable", source, kept, len(keep))
	}
	if !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
		out.WriteString("\n")
	}
	// The cut must spell each kept type as full does.
	trimmed, err := typed.NewParser(typed.YAMLObject(out.String()))
	if err != nil {
		return nil, fmt.Errorf("parsing the trimmed schema of %s: %w", source, err)
	}
	for _, def := range trimmed.Schema.Types {
		orig, _ := p.Schema.FindNamedType(def.Name)
		if !keep[def.Name] || !reflect.DeepEqual(def, orig) {
			return nil, fmt.Errorf("the schema of %s: type %s was cut wrong", source, def.Name)
		}
	}
	return out.Bytes(), nil
}
