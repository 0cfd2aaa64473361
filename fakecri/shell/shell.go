package shell

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// A Shell runs the small command set a streamed exec answers where no exec rule matches: a fake
// runs no binaries, so these are what `kubectl exec` and `kubectl exec -it ... -- sh` can show.
// Each command writes to stdout and stderr and answers an exit code, as a process would.
type Shell struct {
	// Env is the container's environment, KEY=VALUE, in the order it was given.
	Env      []string
	Hostname string
	// Files are the script's files for the container, by absolute path.
	Files map[string]string
	// Container is the container's configuration, nil for none: ls and cat under its bind mounts
	// read the host's directories, its command is the one process pgrep finds (a fake keeps no
	// table of the processes execs start), id answers its security context's user and groups, else
	// ImageUID, its image's user.
	Container *runtimeapi.ContainerConfig
	ImageUID  int64
	// Healthy makes a program the set lacks succeed with no output, as ExecSync answers one (a
	// fake stands every program it cannot run for a healthy one); a streamed exec's shell says
	// "not found" instead.
	Healthy bool
	// Sleep waits d on the runtime's clock; it fails when the exec is cancelled or the container
	// exits meanwhile.
	Sleep  func(ctx context.Context, d time.Duration) error
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Prompt is written before each line an interactive sh reads: on a terminal, as sh does.
	Prompt string
	// status is the exit code of the last command, $?.
	status int
}

// errExit ends a script or an interactive shell with the code of an exit command.
type errExit struct{ code int }

func (e errExit) Error() string { return fmt.Sprintf("exit %d", e.code) }

// builtin is the command the shell knows by name, answering an exit code.
func builtin(name string) (func(s *Shell, ctx context.Context, args []string) int, bool) {
	switch name {
	case "echo":
		return (*Shell).echo, true
	case "true":
		return func(*Shell, context.Context, []string) int { return 0 }, true
	case "false":
		return func(*Shell, context.Context, []string) int { return 1 }, true
	case "env", "printenv":
		return (*Shell).printEnv, true
	case "hostname":
		return func(s *Shell, _ context.Context, _ []string) int { fmt.Fprintln(s.Stdout, s.Hostname); return 0 }, true
	case "pwd":
		return func(s *Shell, _ context.Context, _ []string) int { fmt.Fprintln(s.Stdout, "/"); return 0 }, true
	case "cat":
		return (*Shell).cat, true
	case "ls":
		return (*Shell).ls, true
	case "seq":
		return (*Shell).seq, true
	case "sleep":
		return (*Shell).sleepCmd, true
	case "sh":
		return (*Shell).Sh, true
	case "pgrep":
		return (*Shell).pgrep, true
	case "id":
		return (*Shell).id, true
	case "grep":
		return (*Shell).grep, true
	}
	return nil, false
}

// Knows tells whether name is a command of the set.
func Knows(name string) bool {
	_, ok := builtin(name)
	return ok
}

// Exec runs argv as a container process: a builtin, or an error for a binary the fake cannot run
// (the runtime's own failure, not an exit code, as runc's "executable file not found").
func (s *Shell) Exec(ctx context.Context, argv []string) (int, error) {
	f, ok := builtin(argv[0])
	if !ok {
		return 0, fmt.Errorf("OCI runtime exec failed: exec failed: unable to start container process: exec: %q: executable file not found in $PATH: unknown", argv[0])
	}
	return f(s, ctx, argv[1:]), nil
}

func (s *Shell) echo(_ context.Context, args []string) int {
	newline := true
	if len(args) > 0 && args[0] == "-n" {
		newline, args = false, args[1:]
	}
	io.WriteString(s.Stdout, strings.Join(args, " "))
	if newline {
		io.WriteString(s.Stdout, "\n")
	}
	return 0
}

func (s *Shell) printEnv(_ context.Context, args []string) int {
	if len(args) > 0 {
		code := 0
		for _, name := range args {
			if v, ok := s.lookup(name); ok {
				fmt.Fprintln(s.Stdout, v)
			} else {
				code = 1
			}
		}
		return code
	}
	for _, kv := range s.Env {
		fmt.Fprintln(s.Stdout, kv)
	}
	return 0
}

func (s *Shell) lookup(name string) (string, bool) {
	for i := len(s.Env) - 1; i >= 0; i-- {
		if k, v, _ := strings.Cut(s.Env[i], "="); k == name {
			return v, true
		}
	}
	return "", false
}

// cat copies the named files, or stdin without names or for "-".
func (s *Shell) cat(_ context.Context, args []string) int {
	if len(args) == 0 {
		args = []string{"-"}
	}
	code := 0
	for _, name := range args {
		if name == "-" {
			if _, err := io.Copy(s.Stdout, s.Stdin); err != nil {
				return 1
			}
			continue
		}
		content, ok := s.Files[path.Clean("/"+name)]
		if s.Container != nil {
			switch path.Clean("/" + name) {
			case "/proc/1/cmdline":
				content, ok = s.pid1Cmdline(), true
			case "/proc/self/status":
				content, ok = s.selfStatus(), true
			}
		}
		if host, mounted := s.hostPath(name); mounted {
			b, err := os.ReadFile(host)
			content, ok = string(b), err == nil
		}
		if !ok {
			fmt.Fprintf(s.Stderr, "cat: can't open '%s': No such file or directory\n", name)
			code = 1
			continue
		}
		io.WriteString(s.Stdout, content)
	}
	return code
}

// ls lists the entries directly under each directory named (default /) that the script's files
// make: their names, and the directories leading to deeper ones; under a bind mount, the host
// directory's entries (-A or -a: with those whose names start with a dot).
func (s *Shell) ls(_ context.Context, args []string) int {
	all := false
	var dirs []string
	for _, a := range args {
		switch {
		case a == "-A" || a == "-a":
			all = true
		case a == "-1":
		case strings.HasPrefix(a, "-") && a != "-":
			fmt.Fprintf(s.Stderr, "ls: unrecognized option '%s'\n", a)
			return 1
		default:
			dirs = append(dirs, a)
		}
	}
	if len(dirs) == 0 {
		dirs = []string{"/"}
	}
	code := 0
	for _, dir := range dirs {
		dir = path.Clean("/" + dir)
		if host, ok := s.hostPath(dir); ok {
			if !s.lsHost(dir, host, all) {
				code = 1
			}
			continue
		}
		if _, ok := s.Files[dir]; ok {
			fmt.Fprintln(s.Stdout, path.Base(dir))
			continue
		}
		var names []string
		prefix := strings.TrimSuffix(dir, "/") + "/"
		for p := range s.Files {
			if rest, ok := strings.CutPrefix(p, prefix); ok {
				name, _, _ := strings.Cut(rest, "/")
				if !slices.Contains(names, name) {
					names = append(names, name)
				}
			}
		}
		if len(names) == 0 && dir != "/" {
			fmt.Fprintf(s.Stderr, "ls: %s: No such file or directory\n", dir)
			code = 1
			continue
		}
		slices.Sort(names)
		for _, n := range names {
			fmt.Fprintln(s.Stdout, n)
		}
	}
	return code
}

// pid1Cmdline is /proc/1/cmdline in the container: the pod's infra process where the container
// shares the pod's process namespace (its namespace options say POD), else its own command, each
// argument NUL-terminated.
func (s *Shell) pid1Cmdline() string {
	argv := []string{"/pause"}
	if ns := s.Container.GetLinux().GetSecurityContext().GetNamespaceOptions(); ns == nil || ns.Pid != runtimeapi.NamespaceMode_POD {
		argv = append(slices.Clone(s.Container.GetCommand()), s.Container.GetArgs()...)
	}
	var b strings.Builder
	for _, a := range argv {
		b.WriteString(a)
		b.WriteByte(0)
	}
	return b.String()
}

// capabilityBits numbers Linux's capabilities (linux/capability.h), as the CRI names them.
var capabilityBits = map[string]uint{
	"CHOWN": 0, "DAC_OVERRIDE": 1, "DAC_READ_SEARCH": 2, "FOWNER": 3, "FSETID": 4, "KILL": 5, "SETGID": 6,
	"SETUID": 7, "SETPCAP": 8, "LINUX_IMMUTABLE": 9, "NET_BIND_SERVICE": 10, "NET_BROADCAST": 11,
	"NET_ADMIN": 12, "NET_RAW": 13, "IPC_LOCK": 14, "IPC_OWNER": 15, "SYS_MODULE": 16, "SYS_RAWIO": 17,
	"SYS_CHROOT": 18, "SYS_PTRACE": 19, "SYS_PACCT": 20, "SYS_ADMIN": 21, "SYS_BOOT": 22, "SYS_NICE": 23,
	"SYS_RESOURCE": 24, "SYS_TIME": 25, "SYS_TTY_CONFIG": 26, "MKNOD": 27, "LEASE": 28, "AUDIT_WRITE": 29,
	"AUDIT_CONTROL": 30, "SETFCAP": 31, "MAC_OVERRIDE": 32, "MAC_ADMIN": 33, "SYSLOG": 34, "WAKE_ALARM": 35,
	"BLOCK_SUSPEND": 36, "AUDIT_READ": 37, "PERFMON": 38, "BPF": 39, "CHECKPOINT_RESTORE": 40,
}

const (
	// allCapabilities has every capability's bit.
	allCapabilities uint64 = 1<<41 - 1
	// defaultCapabilities is containerd's default set: CHOWN, DAC_OVERRIDE, FSETID, FOWNER, MKNOD,
	// NET_RAW, SETGID, SETUID, SETFCAP, SETPCAP, NET_BIND_SERVICE, SYS_CHROOT, KILL, AUDIT_WRITE.
	defaultCapabilities uint64 = 0xa80425fb
)

// capabilities is the container's capability set as containerd makes it: every one when
// privileged, else the default set, then ALL added or dropped, then each named one added, then
// each named one dropped.
func capabilities(sc *runtimeapi.LinuxContainerSecurityContext) uint64 {
	if sc.GetPrivileged() {
		return allCapabilities
	}
	caps := defaultCapabilities
	add, drop := sc.GetCapabilities().GetAddCapabilities(), sc.GetCapabilities().GetDropCapabilities()
	if slices.Contains(add, "ALL") {
		caps = allCapabilities
	}
	if slices.Contains(drop, "ALL") {
		caps = 0
	}
	for _, c := range add {
		if bit, ok := capabilityBits[strings.TrimPrefix(c, "CAP_")]; ok {
			caps |= 1 << bit
		}
	}
	for _, c := range drop {
		if bit, ok := capabilityBits[strings.TrimPrefix(c, "CAP_")]; ok {
			caps &^= 1 << bit
		}
	}
	return caps
}

// selfStatus is /proc/self/status of a process in the container: its ids, its capability sets (a
// user other than root keeps the bounding set only), no_new_privs and its seccomp mode.
func (s *Shell) selfStatus() string {
	sc := s.Container.GetLinux().GetSecurityContext()
	uid := s.ImageUID
	if sc.GetRunAsUser() != nil {
		uid = sc.GetRunAsUser().GetValue()
	}
	gid := sc.GetRunAsGroup().GetValue()
	bnd := capabilities(sc)
	eff := bnd
	if uid != 0 {
		eff = 0
	}
	// Seccomp 2 is a filter (the runtime's default profile or a localhost one), 0 none (unconfined,
	// or no profile given, as containerd runs it).
	seccomp := 0
	if t := sc.GetSeccomp().GetProfileType(); sc.GetSeccomp() != nil && t != runtimeapi.SecurityProfile_Unconfined {
		seccomp = 2
	}
	noNewPrivs := 0
	if sc.GetNoNewPrivs() {
		noNewPrivs = 1
	}
	return fmt.Sprintf("Name:\tcat\nState:\tR (running)\nUid:\t%d\t%d\t%d\t%d\nGid:\t%d\t%d\t%d\t%d\nCapInh:\t%016x\nCapPrm:\t%016x\nCapEff:\t%016x\nCapBnd:\t%016x\nCapAmb:\t%016x\nNoNewPrivs:\t%d\nSeccomp:\t%d\n",
		uid, uid, uid, uid, gid, gid, gid, gid, 0, eff, eff, bnd, 0, noNewPrivs, seccomp)
}

// hostPath answers the host path that p, a path in the container, is under the deepest bind
// mount of.
func (s *Shell) hostPath(p string) (string, bool) {
	p = path.Clean("/" + p)
	best, host := "", ""
	for _, m := range s.Container.GetMounts() {
		cp := path.Clean("/" + m.GetContainerPath())
		if rest, ok := strings.CutPrefix(p, cp); ok && (rest == "" || rest[0] == '/' || cp == "/") && len(cp) >= len(best) {
			best, host = cp, filepath.Join(m.GetHostPath(), rest)
		}
	}
	return host, host != ""
}

// lsHost lists a host directory (or names a host file) seen in the container at dir.
func (s *Shell) lsHost(dir, host string, all bool) bool {
	info, err := os.Stat(host)
	if err != nil {
		fmt.Fprintf(s.Stderr, "ls: %s: No such file or directory\n", dir)
		return false
	}
	if !info.IsDir() {
		fmt.Fprintln(s.Stdout, path.Base(dir))
		return true
	}
	entries, err := os.ReadDir(host)
	if err != nil {
		fmt.Fprintf(s.Stderr, "ls: can't open '%s': Permission denied\n", dir)
		return false
	}
	for _, e := range entries {
		if all || !strings.HasPrefix(e.Name(), ".") {
			fmt.Fprintln(s.Stdout, e.Name())
		}
	}
	return true
}

// grep prints the lines of the named files (or stdin) that match the pattern (a Go regular
// expression, which reads busybox's basic ones the tests use alike): -q prints nothing, -v
// inverts, -i ignores case; exit 0 when a line matched, 1 when none did, 2 on an error.
func (s *Shell) grep(_ context.Context, args []string) int {
	quiet, invert, fold := false, false, false
	for len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' {
		for _, f := range args[0][1:] {
			switch f {
			case 'q':
				quiet = true
			case 'v':
				invert = true
			case 'i':
				fold = true
			default:
				fmt.Fprintf(s.Stderr, "grep: invalid option -- '%c'\n", f)
				return 2
			}
		}
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(s.Stderr, "Usage: grep [-qvi] PATTERN [FILE]...")
		return 2
	}
	pattern := args[0]
	if fold {
		pattern = "(?i)" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		fmt.Fprintf(s.Stderr, "grep: bad regex '%s'\n", args[0])
		return 2
	}
	files := args[1:]
	if len(files) == 0 {
		files = []string{"-"}
	}
	matched, failed := false, false
	for _, name := range files {
		var in bytes.Buffer
		reader := &Shell{Container: s.Container, ImageUID: s.ImageUID, Files: s.Files, Stdin: s.Stdin, Stdout: &in, Stderr: s.Stderr}
		if reader.cat(context.Background(), []string{name}) != 0 {
			failed = true
			continue
		}
		lines := bufio.NewScanner(&in)
		lines.Buffer(make([]byte, 64<<10), 1<<20)
		for lines.Scan() {
			if re.MatchString(lines.Text()) == invert {
				continue
			}
			matched = true
			if quiet {
				continue
			}
			if len(files) > 1 {
				fmt.Fprintf(s.Stdout, "%s:", name)
			}
			fmt.Fprintln(s.Stdout, lines.Text())
		}
	}
	switch {
	case failed && !(quiet && matched):
		return 2
	case matched:
		return 0
	}
	return 1
}

// pgrep prints the ids of the processes whose name (-f: whole command line) matches the pattern,
// exit 1 when none does. The container's main process, id 1, is the only one a fake has.
func (s *Shell) pgrep(_ context.Context, args []string) int {
	full := false
	if len(args) > 0 && args[0] == "-f" {
		full, args = true, args[1:]
	}
	if len(args) != 1 {
		fmt.Fprintln(s.Stderr, "Usage: pgrep [-f] PATTERN")
		return 2
	}
	re, err := regexp.Compile(args[0])
	if err != nil {
		fmt.Fprintf(s.Stderr, "pgrep: bad regex '%s'\n", args[0])
		return 2
	}
	main := s.Container
	argv := append(slices.Clone(main.GetCommand()), main.GetArgs()...)
	if len(argv) == 0 {
		return 1
	}
	subject := path.Base(argv[0])
	if full {
		subject = strings.Join(argv, " ")
	}
	if !re.MatchString(subject) {
		return 1
	}
	fmt.Fprintln(s.Stdout, 1)
	return 0
}

// id prints the user and groups the container's security context gives its processes (else the
// image's user, and group 0): -u, -g, -G, with -n their names (root's only: a fake image has no
// /etc/passwd).
func (s *Shell) id(_ context.Context, args []string) int {
	var which byte
	names := false
	for _, a := range args {
		if len(a) < 2 || a[0] != '-' {
			fmt.Fprintf(s.Stderr, "id: unknown user %s\n", a)
			return 1
		}
		for _, f := range a[1:] {
			switch f {
			case 'n':
				names = true
			case 'u', 'g', 'G':
				which = byte(f)
			default:
				fmt.Fprintf(s.Stderr, "id: invalid option -- '%c'\n", f)
				return 1
			}
		}
	}
	sc := s.Container.GetLinux().GetSecurityContext()
	uid, gid := sc.GetRunAsUser().GetValue(), sc.GetRunAsGroup().GetValue()
	if sc.GetRunAsUser() == nil && s.Container != nil {
		uid = s.ImageUID
	}
	user := sc.GetRunAsUsername()
	if user != "" && sc.GetRunAsUser() == nil && (which == 'u' && !names || which == 0) {
		fmt.Fprintf(s.Stderr, "id: the fake's image has no /etc/passwd to find %s's id in\n", user)
		return 1
	}
	if user == "" && uid == 0 {
		user = "root"
	}
	name := func(id int64) string {
		if id == 0 {
			return "root"
		}
		return strconv.FormatInt(id, 10)
	}
	groups := append([]int64{gid}, sc.GetSupplementalGroups()...)
	switch which {
	case 'u':
		if names {
			if user == "" {
				fmt.Fprintf(s.Stderr, "id: unknown ID %d\n", uid)
				return 1
			}
			fmt.Fprintln(s.Stdout, user)
		} else {
			fmt.Fprintln(s.Stdout, uid)
		}
	case 'g':
		if names {
			fmt.Fprintln(s.Stdout, name(gid))
		} else {
			fmt.Fprintln(s.Stdout, gid)
		}
	case 'G':
		out := make([]string, len(groups))
		for i, g := range groups {
			out[i] = strconv.FormatInt(g, 10)
			if names {
				out[i] = name(g)
			}
		}
		fmt.Fprintln(s.Stdout, strings.Join(out, " "))
	default:
		out := make([]string, len(groups))
		for i, g := range groups {
			out[i] = fmt.Sprintf("%d(%s)", g, name(g))
		}
		if user == "" {
			user = strconv.FormatInt(uid, 10)
		}
		fmt.Fprintf(s.Stdout, "uid=%d(%s) gid=%d(%s) groups=%s\n", uid, user, gid, name(gid), strings.Join(out, ","))
	}
	return 0
}

// sandboxFiles are the files a runtime makes for the pod's containers from its sandbox's
// configuration: /etc/resolv.conf from its DNS configuration and /proc/sys entries of its sysctls.
func SandboxFiles(cfg *runtimeapi.PodSandboxConfig) map[string]string {
	files := map[string]string{}
	if dns := cfg.GetDnsConfig(); dns != nil {
		var b strings.Builder
		if len(dns.Searches) > 0 {
			fmt.Fprintf(&b, "search %s\n", strings.Join(dns.Searches, " "))
		}
		for _, ns := range dns.Servers {
			fmt.Fprintf(&b, "nameserver %s\n", ns)
		}
		if len(dns.Options) > 0 {
			fmt.Fprintf(&b, "options %s\n", strings.Join(dns.Options, " "))
		}
		files["/etc/resolv.conf"] = b.String()
	}
	for k, v := range cfg.GetLinux().GetSysctls() {
		files["/proc/sys/"+strings.ReplaceAll(k, ".", "/")] = v + "\n"
	}
	return files
}

// seq prints the numbers from first (default 1) to last, one a line.
func (s *Shell) seq(_ context.Context, args []string) int {
	nums := make([]int64, len(args))
	for i, a := range args {
		n, err := strconv.ParseInt(a, 10, 64)
		if err != nil {
			fmt.Fprintf(s.Stderr, "seq: invalid number '%s'\n", a)
			return 1
		}
		nums[i] = n
	}
	first, last := int64(1), int64(0)
	switch len(nums) {
	case 1:
		last = nums[0]
	case 2:
		first, last = nums[0], nums[1]
	default:
		fmt.Fprintln(s.Stderr, "Usage: seq [FIRST] LAST")
		return 1
	}
	w := bufio.NewWriterSize(s.Stdout, 64<<10)
	buf := make([]byte, 0, 24)
	for n := first; n <= last; n++ {
		buf = strconv.AppendInt(buf[:0], n, 10)
		buf = append(buf, '\n')
		if _, err := w.Write(buf); err != nil {
			return 1
		}
	}
	if w.Flush() != nil {
		return 1
	}
	return 0
}

func (s *Shell) sleepCmd(ctx context.Context, args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(s.Stderr, "Usage: sleep SECONDS")
		return 1
	}
	secs, err := strconv.ParseFloat(args[0], 64)
	if err != nil || secs < 0 {
		fmt.Fprintf(s.Stderr, "sleep: invalid number '%s'\n", args[0])
		return 1
	}
	if err := s.Sleep(ctx, time.Duration(secs*float64(time.Second))); err != nil {
		return 130
	}
	return 0
}

// Sh runs `sh -c SCRIPT`, or reads commands from stdin line by line without arguments.
func (s *Shell) Sh(ctx context.Context, args []string) int {
	if len(args) >= 2 && args[0] == "-c" {
		return s.script(ctx, args[1])
	}
	if len(args) > 0 && args[0] != "-i" {
		fmt.Fprintf(s.Stderr, "sh: can't open '%s': No such file or directory\n", args[0])
		return 127
	}
	lines := bufio.NewScanner(s.Stdin)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for io.WriteString(s.Stdout, s.Prompt); lines.Scan(); io.WriteString(s.Stdout, s.Prompt) {
		var exit errExit
		if err := s.line(ctx, lines.Text()); errors.As(err, &exit) {
			return exit.code
		}
	}
	return s.status
}

// script runs a command line and answers its status; exit ends it early with its code.
func (s *Shell) script(ctx context.Context, line string) int {
	var exit errExit
	if err := s.line(ctx, line); errors.As(err, &exit) {
		return exit.code
	}
	return s.status
}

// line runs one command line: pipelines joined by ";", "&&" and "||". A syntax error is reported
// on stderr with status 2, as sh does.
func (s *Shell) line(ctx context.Context, line string) error {
	toks, err := s.tokens(line)
	if err != nil {
		fmt.Fprintf(s.Stderr, "sh: syntax error: %v\n", err)
		s.status = 2
		return nil
	}
	op := ";"
	for len(toks) > 0 {
		end := slices.IndexFunc(toks, func(t token) bool { return t.op == ";" || t.op == "&&" || t.op == "||" })
		if end < 0 {
			end = len(toks)
		}
		run := op == ";" || op == "&&" && s.status == 0 || op == "||" && s.status != 0
		if run {
			if err := s.pipeline(ctx, toks[:end]); err != nil {
				return err
			}
		}
		if end == len(toks) {
			break
		}
		op, toks = toks[end].op, toks[end+1:]
	}
	return nil
}

// pipeline runs commands joined by "|", each reading what the one before wrote.
func (s *Shell) pipeline(ctx context.Context, toks []token) error {
	var cmds [][]string
	cmd := []string{}
	for _, t := range toks {
		if t.op == "|" {
			cmds, cmd = append(cmds, cmd), []string{}
			continue
		}
		cmd = append(cmd, t.word)
	}
	cmds = append(cmds, cmd)
	stdin, stdout := s.Stdin, s.Stdout
	defer func() { s.Stdin, s.Stdout = stdin, stdout }()
	for i, argv := range cmds {
		if len(argv) == 0 {
			if len(cmds) > 1 {
				fmt.Fprintln(s.Stderr, "sh: syntax error: unexpected \"|\"")
				s.status = 2
			}
			return nil
		}
		var piped bytes.Buffer
		if i < len(cmds)-1 {
			s.Stdout = &piped
		} else {
			s.Stdout = stdout
		}
		if argv[0] == "exit" {
			code := s.status
			if len(argv) > 1 {
				n, err := strconv.Atoi(argv[1])
				if err != nil {
					fmt.Fprintf(s.Stderr, "sh: exit: Illegal number: %s\n", argv[1])
					n = 2
				}
				code = n & 0xff
			}
			return errExit{code}
		}
		f, ok := builtin(argv[0])
		switch {
		case !ok && s.Healthy:
			s.status = 0
		case !ok:
			fmt.Fprintf(s.Stderr, "sh: %s: not found\n", argv[0])
			s.status = 127
		default:
			s.status = f(s, ctx, argv[1:])
		}
		s.Stdin = &piped
	}
	return nil
}

// token is a word or an operator (";", "&&", "||", "|") of a command line.
type token struct {
	word string
	op   string
}

// tokens splits a command line as sh does for these commands: words with '...' and "..." quoting
// and backslash escapes, $NAME, ${NAME} and $? expanded outside single quotes, # comments.
func (s *Shell) tokens(line string) ([]token, error) {
	var toks []token
	var word strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			toks = append(toks, token{word: word.String()})
			word.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !inWord:
			i = len(line)
		case c == ';':
			flush()
			toks = append(toks, token{op: ";"})
		case c == '&' && i+1 < len(line) && line[i+1] == '&':
			flush()
			toks = append(toks, token{op: "&&"})
			i++
		case c == '|' && i+1 < len(line) && line[i+1] == '|':
			flush()
			toks = append(toks, token{op: "||"})
			i++
		case c == '|':
			flush()
			toks = append(toks, token{op: "|"})
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unterminated quoted string")
			}
			word.WriteString(line[i+1 : i+1+end])
			inWord, i = true, i+1+end
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				switch {
				case line[i] == '\\' && i+1 < len(line) && strings.IndexByte(`"\$`, line[i+1]) >= 0:
					word.WriteByte(line[i+1])
					i++
				case line[i] == '$':
					i = s.expand(line, i, &word)
				default:
					word.WriteByte(line[i])
				}
			}
			if i >= len(line) {
				return nil, errors.New("unterminated quoted string")
			}
			inWord = true
		case c == '\\' && i+1 < len(line):
			word.WriteByte(line[i+1])
			inWord, i = true, i+1
		case c == '$':
			i = s.expand(line, i, &word)
			inWord = true
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return toks, nil
}

// expand writes the value of the variable at line[i] ('$') to w and answers the index of its last
// byte; a '$' naming nothing is itself.
func (s *Shell) expand(line string, i int, w *strings.Builder) int {
	rest := line[i+1:]
	switch {
	case strings.HasPrefix(rest, "?"):
		w.WriteString(strconv.Itoa(s.status))
		return i + 1
	case strings.HasPrefix(rest, "{"):
		end := strings.IndexByte(rest, '}')
		if end < 0 {
			w.WriteByte('$')
			return i
		}
		v, _ := s.lookup(rest[1:end])
		w.WriteString(v)
		return i + 1 + end
	}
	n := 0
	for n < len(rest) && (rest[n] == '_' || rest[n] >= 'a' && rest[n] <= 'z' || rest[n] >= 'A' && rest[n] <= 'Z' || n > 0 && rest[n] >= '0' && rest[n] <= '9') {
		n++
	}
	if n == 0 {
		w.WriteByte('$')
		return i
	}
	v, _ := s.lookup(rest[:n])
	w.WriteString(v)
	return i + n
}
