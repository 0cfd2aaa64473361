package config

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/ext"
)

// perCallCostLimit bounds one evaluation, as Kubernetes does, so no expression can stall a request.
const perCallCostLimit = 1000000

// Program is a compiled, type-checked CEL expression, ready for the enforcing components to evaluate.
type Program struct {
	// Expression is the source text.
	Expression string
	// OutputType is the type the checker inferred; dyn when it depends on claim values.
	OutputType *cel.Type
	cel.Program
}

// UserInfo is the value of the variable user in user validation rules.
type UserInfo struct {
	Username string              `cel:"username"`
	UID      string              `cel:"uid"`
	Groups   []string            `cel:"groups"`
	Extra    map[string][]string `cel:"extra"`
}

// SubjectAccessReviewSpec is the value of the variable request in webhook match conditions: the spec
// of a v1 SubjectAccessReview.
type SubjectAccessReviewSpec struct {
	ResourceAttributes    *ResourceAttributes    `cel:"resourceAttributes"`
	NonResourceAttributes *NonResourceAttributes `cel:"nonResourceAttributes"`
	User                  string                 `cel:"user"`
	Groups                []string               `cel:"groups"`
	Extra                 map[string][]string    `cel:"extra"`
	UID                   string                 `cel:"uid"`
}

// ResourceAttributes describes a resource request of a SubjectAccessReview.
type ResourceAttributes struct {
	Namespace     string         `cel:"namespace"`
	Verb          string         `cel:"verb"`
	Group         string         `cel:"group"`
	Version       string         `cel:"version"`
	Resource      string         `cel:"resource"`
	Subresource   string         `cel:"subresource"`
	Name          string         `cel:"name"`
	FieldSelector *FieldSelector `cel:"fieldSelector"`
	LabelSelector *LabelSelector `cel:"labelSelector"`
}

// FieldSelector is the field selector of a resource request.
type FieldSelector struct {
	RawSelector  string                `cel:"rawSelector"`
	Requirements []SelectorRequirement `cel:"requirements"`
}

// LabelSelector is the label selector of a resource request.
type LabelSelector struct {
	RawSelector  string                `cel:"rawSelector"`
	Requirements []SelectorRequirement `cel:"requirements"`
}

// SelectorRequirement is one requirement of a field or label selector.
type SelectorRequirement struct {
	Key      string   `cel:"key"`
	Operator string   `cel:"operator"`
	Values   []string `cel:"values"`
}

// NonResourceAttributes describes a non-resource request of a SubjectAccessReview.
type NonResourceAttributes struct {
	Path string `cel:"path"`
	Verb string `cel:"verb"`
}

// Names of the CEL variables of each environment.
const (
	claimsVar  = "claims"
	userVar    = "user"
	requestVar = "request"
)

var (
	stringType        = cel.StringType
	listOfStringsType = cel.ListType(cel.StringType)
	boolType          = cel.BoolType
)

// environments are built once: building one costs far more than compiling an expression.
var environments = sync.OnceValues(func() (map[string]*cel.Env, error) {
	common := []cel.EnvOption{ext.Strings(), ext.Lists(), ext.Sets(), cel.OptionalTypes()}
	claims, err := cel.NewEnv(append(common,
		cel.Variable(claimsVar, cel.MapType(cel.StringType, cel.DynType)))...)
	if err != nil {
		return nil, err
	}
	user, err := cel.NewEnv(append(common,
		ext.NativeTypes(reflect.TypeFor[UserInfo](), ext.ParseStructTags(true)),
		cel.Variable(userVar, cel.ObjectType(celTypeName[UserInfo]())))...)
	if err != nil {
		return nil, err
	}
	request, err := cel.NewEnv(append(common,
		ext.NativeTypes(reflect.TypeFor[SubjectAccessReviewSpec](), ext.ParseStructTags(true)),
		kubernetesFieldPresence,
		cel.Variable(requestVar, cel.ObjectType(celTypeName[SubjectAccessReviewSpec]())))...)
	if err != nil {
		return nil, err
	}
	return map[string]*cel.Env{claimsVar: claims, userVar: user, requestVar: request}, nil
})

// celTypeName is the name NativeTypes gives a Go struct: its package's simple name and its own.
func celTypeName[T any]() string {
	return nativeTypeName(reflect.TypeFor[T]())
}

func nativeTypeName(t reflect.Type) string {
	pkg := t.PkgPath()
	return pkg[strings.LastIndex(pkg, "/")+1:] + "." + t.Name()
}

// compiled is the result of compiling one expression.
type compiled struct {
	program *Program
	// usesEmail and usesEmailVerified say whether a claims expression reads claims.email and
	// claims.email_verified, for the rule that the first requires the second.
	usesEmail, usesEmailVerified bool
}

// compiler compiles the expressions of one file. It remembers each result, so an expression
// repeated through YAML aliases is compiled once and the work stays bounded by the file's size.
type compiler struct {
	results map[compileKey]compileResult
}

type compileKey struct {
	variable, expr, want string
}

type compileResult struct {
	compiled *compiled
	reason   string
}

func newCompiler() *compiler {
	return &compiler{results: map[compileKey]compileResult{}}
}

// compile is compileExpression, once per distinct expression, variable and wanted types.
func (cc *compiler) compile(variable, expr string, want ...*cel.Type) (*compiled, string) {
	key := compileKey{variable: variable, expr: expr, want: typeNames(want)}
	if r, ok := cc.results[key]; ok {
		return r.compiled, r.reason
	}
	c, reason := compileExpression(variable, expr, want...)
	cc.results[key] = compileResult{compiled: c, reason: reason}
	return c, reason
}

// compile compiles and type-checks expr in the environment of variable, and requires its result to
// be one of want (or dyn, whose type is only known at evaluation). The returned reason is empty on
// success.
func compileExpression(variable, expr string, want ...*cel.Type) (*compiled, string) {
	envs, err := environments()
	if err != nil {
		return nil, "CEL environment: " + err.Error()
	}
	env := envs[variable]
	checked, issues := env.Compile(expr)
	if issues != nil && issues.Err() != nil {
		msgs := make([]string, 0, len(issues.Errors()))
		for _, e := range issues.Errors() {
			msgs = append(msgs, fmt.Sprintf("%d:%d: %s", e.Location.Line(), e.Location.Column()+1, e.Message))
		}
		return nil, "compilation failed: " + strings.Join(msgs, "; ")
	}
	out := checked.OutputType()
	if !resultAllowed(out, want) {
		return nil, fmt.Sprintf("must evaluate to %s, not %s", typeNames(want), out)
	}
	prg, err := env.Program(checked, cel.CostLimit(perCallCostLimit))
	if err != nil {
		return nil, "program construction failed: " + err.Error()
	}
	c := &compiled{program: &Program{Expression: expr, OutputType: out, Program: prg}}
	if variable == claimsVar {
		c.usesEmail = usesClaim(checked, "email")
		c.usesEmailVerified = usesClaim(checked, "email_verified")
	}
	return c, ""
}

// resultAllowed accepts the wanted types, dyn, and a list of dyn where a list of strings is wanted,
// because claim values are dyn and their element types only show at evaluation.
func resultAllowed(out *cel.Type, want []*cel.Type) bool {
	if out.IsExactType(cel.DynType) {
		return true
	}
	for _, w := range want {
		if out.IsExactType(w) {
			return true
		}
		if w.IsExactType(listOfStringsType) && out.IsExactType(cel.ListType(cel.DynType)) {
			return true
		}
	}
	return false
}

func typeNames(ts []*cel.Type) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.String()
	}
	return strings.Join(names, " or ")
}

// usesClaim reports whether a checked claims expression reads claims.<name>, claims["<name>"] or
// their optional forms.
func usesClaim(checked *cel.Ast, name string) bool {
	root := ast.NavigateAST(checked.NativeRep())
	found := ast.MatchDescendants(root, func(e ast.NavigableExpr) bool {
		switch e.Kind() {
		case ast.SelectKind:
			s := e.AsSelect()
			return s.FieldName() == name && isClaims(s.Operand())
		case ast.CallKind:
			call := e.AsCall()
			if fn := call.FunctionName(); fn != operators.Index && fn != operators.OptIndex && fn != operators.OptSelect {
				return false
			}
			args := call.Args()
			if len(args) != 2 || !isClaims(args[0]) || args[1].Kind() != ast.LiteralKind {
				return false
			}
			s, ok := args[1].AsLiteral().Value().(string)
			return ok && s == name
		}
		return false
	})
	return len(found) > 0
}

func isClaims(e ast.Expr) bool {
	return e.Kind() == ast.IdentKind && e.AsIdent() == claimsVar
}
