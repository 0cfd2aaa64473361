// Package options turns the node agent's command line, its `--config` file and `--config-dir` drop-ins
// into one validated configuration: every option of SPEC.md with its default, grouped help, deprecation
// warnings, `--version`, feature gates, and a precise refusal for every value SPEC.md forbids.
//
// Precedence follows Kubernetes' kubelet: built-in defaults, then the `--config` file, then the drop-ins
// in lexical order, then the command line, which is parsed a second time over the loaded file so an
// option given on the command line always wins. Feature gates merge gate by gate.
package options
