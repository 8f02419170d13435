package ansible

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/gpukit/gpukit/pkg/inventory"
)

// sshOptions is what an ansible_ssh_common_args / ansible_ssh_extra_args
// string says that gpukit can express.
type sshOptions struct {
	user, keyFile, knownHostsFile, connectTimeout string
	port                                          int
	bastion                                       *inventory.Bastion
	// noHostKeyCheck: StrictHostKeyChecking=no or UserKnownHostsFile=/dev/null,
	// which gpukit refuses to copy (it never turns host key checking off).
	noHostKeyCheck bool
	// acceptNew: StrictHostKeyChecking=accept-new, gpukit's --accept-new-host-keys.
	acceptNew bool
	// ignored are options that tune OpenSSH itself (ControlMaster, ...) and
	// have no gpukit setting; problems are what could not be read at all.
	ignored  []string
	problems []string
}

// parseSSHArgs reads the ssh command-line options Ansible passes through.
func parseSSHArgs(s string) sshOptions {
	var o sshOptions
	words, err := shellSplit(s, false)
	if err != nil {
		o.problems = append(o.problems, fmt.Sprintf("cannot split into words: %v", err))
		return o
	}
	for i := 0; i < len(words); i++ {
		word := words[i]
		flag, arg, has := splitFlag(words, &i)
		switch flag {
		case "-o":
			if has {
				o.option(arg, false)
			}
		case "-J":
			if has {
				o.jump(arg)
			}
		case "-i":
			if has {
				o.keyFile = arg
			}
		case "-l":
			if has {
				o.user = arg
			}
		case "-p":
			if has {
				o.setPort(arg, &o.port)
			}
		case "-F":
			o.problems = append(o.problems, "-F "+arg+": an ssh_config file is not read by gpukit; copy its settings into spec.ssh")
		case "-q", "-A", "-a", "-C", "-T", "-t", "-N", "-v", "-vv", "-vvv", "-4", "-6", "-x", "-X", "-Y", "-K", "-k":
			o.ignored = append(o.ignored, flag)
		default:
			o.problems = append(o.problems, fmt.Sprintf("argument %q is not understood", word))
		}
	}
	return o
}

// splitFlag returns the flag at words[*i] and its argument, attached ("-p22")
// or the next word ("-p 22", advancing *i). has is false when a flag that
// needs an argument has none.
func splitFlag(words []string, i *int) (flag, arg string, has bool) {
	w := words[*i]
	if len(w) < 2 || w[0] != '-' {
		return w, "", false
	}
	flag = w[:2]
	// The options of ssh(1) that take an argument.
	if !strings.Contains("BbcDEeFIiJLlmOopQRSWw", w[1:2]) {
		return w, "", true
	}
	if len(w) > 2 {
		return flag, w[2:], true
	}
	if *i+1 < len(words) {
		*i++
		return flag, words[*i], true
	}
	return flag, "", false
}

// option reads one "-o Key=Value" (or "Key Value"). inProxy marks options of
// the ssh command inside a ProxyCommand: they configure the hop to the
// bastion, so only host key settings matter there.
func (o *sshOptions) option(opt string, inProxy bool) {
	opt = strings.TrimSpace(opt)
	cut := strings.IndexAny(opt, "= \t")
	if cut < 0 {
		o.problems = append(o.problems, fmt.Sprintf("option %q has no value", opt))
		return
	}
	key := strings.ToLower(opt[:cut])
	value := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(opt[cut:]), "="))
	switch key {
	case "stricthostkeychecking":
		switch strings.ToLower(value) {
		case "no", "off", "false":
			o.noHostKeyCheck = true
		case "accept-new":
			o.acceptNew = true
		}
		return
	case "userknownhostsfile":
		if f := strings.Fields(value); len(f) > 0 && f[0] == "/dev/null" {
			o.noHostKeyCheck = true
		} else if len(f) > 0 && !inProxy {
			o.knownHostsFile = f[0]
		}
		return
	}
	if inProxy {
		switch key {
		case "user":
			o.bastion.User = value
		case "port":
			o.setPort(value, &o.bastion.Port)
		case "identityfile":
			o.bastion.KeyFile = value
		default:
			o.ignored = append(o.ignored, opt[:cut])
		}
		return
	}
	switch key {
	case "proxycommand":
		o.proxyCommand(value)
	case "proxyjump":
		o.jump(value)
	case "user":
		o.user = value
	case "port":
		o.setPort(value, &o.port)
	case "identityfile":
		o.keyFile = value
	case "connecttimeout":
		if n, err := strconv.Atoi(value); err == nil && n > 0 {
			o.connectTimeout = strconv.Itoa(n) + "s"
		}
	default:
		o.ignored = append(o.ignored, opt[:cut])
	}
}

func (o *sshOptions) setPort(s string, dst *int) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		o.problems = append(o.problems, fmt.Sprintf("port %q is not a number between 1 and 65535", s))
		return
	}
	*dst = n
}

// jump reads a ProxyJump value, "[user@]host[:port]". gpukit has one jump
// host, so a chain ("a,b") cannot be expressed.
func (o *sshOptions) jump(spec string) {
	if strings.Contains(spec, ",") {
		o.problems = append(o.problems, fmt.Sprintf("ProxyJump %q chains several jump hosts; gpukit supports one (spec.ssh.bastion)", spec))
		return
	}
	if strings.EqualFold(spec, "none") {
		return
	}
	b, err := parseDestination(spec)
	if err != nil {
		o.problems = append(o.problems, fmt.Sprintf("ProxyJump %q: %v", spec, err))
		return
	}
	o.bastion = b
}

// proxyCommand reads the two ProxyCommand forms that are a jump host in
// disguise: "ssh -W %h:%p [user@]bastion" and "ssh [user@]bastion nc %h %p".
// Anything else (corkscrew, aws ssm, a script) has no gpukit equivalent.
func (o *sshOptions) proxyCommand(cmd string) {
	words, err := shellSplit(cmd, false)
	// The command is not quoted back in notes: a ProxyCommand may hold a
	// password (sshpass -p ...), and notes end up in files and terminals.
	program := "ProxyCommand"
	if err == nil && len(words) > 0 {
		program = fmt.Sprintf("ProxyCommand %q", path.Base(words[0])+" ...")
	}
	unsupported := func(why string) {
		o.problems = append(o.problems, fmt.Sprintf("%s %s; only \"ssh -W %%h:%%p [user@]bastion\" and \"ssh [user@]bastion nc %%h %%p\" convert to spec.ssh.bastion", program, why))
	}
	if err != nil || len(words) == 0 {
		unsupported("cannot be read")
		return
	}
	if path.Base(words[0]) != "ssh" {
		unsupported("is not an ssh command")
		return
	}
	saved := o.bastion
	o.bastion = &inventory.Bastion{}
	forward, dest := false, ""
	var rest []string
	// OpenSSH reads options on both sides of the destination; the first
	// word that is neither starts the remote command (nc %h %p).
	for i := 1; i < len(words); i++ {
		if !strings.HasPrefix(words[i], "-") {
			if dest != "" {
				rest = words[i:]
				break
			}
			dest = words[i]
			continue
		}
		flag, arg, has := splitFlag(words, &i)
		switch {
		case flag == "-W":
			forward = strings.Contains(arg, "%h")
		case flag == "-p" && has:
			o.setPort(arg, &o.bastion.Port)
		case flag == "-l" && has:
			o.bastion.User = arg
		case flag == "-i" && has:
			o.bastion.KeyFile = arg
		case flag == "-o" && has:
			o.option(arg, true)
		case flag == "-J":
			o.bastion = saved
			unsupported("chains another jump host")
			return
		}
	}
	if !forward && !isNetcat(rest) {
		o.bastion = saved
		unsupported("does not forward to %h:%p")
		return
	}
	if dest == "" {
		o.bastion = saved
		unsupported("names no jump host")
		return
	}
	b, err := parseDestination(dest)
	if err != nil {
		o.bastion = saved
		unsupported(err.Error())
		return
	}
	b.User = firstNonEmpty(b.User, o.bastion.User)
	if b.Port == 0 {
		b.Port = o.bastion.Port
	}
	b.KeyFile = o.bastion.KeyFile
	o.bastion = b
}

func isNetcat(words []string) bool {
	return len(words) == 3 && (words[0] == "nc" || words[0] == "ncat" || words[0] == "netcat") &&
		words[1] == "%h" && words[2] == "%p"
}

// parseDestination reads "[user@]host[:port]" or "ssh://[user@]host[:port]".
func parseDestination(s string) (*inventory.Bastion, error) {
	s = strings.TrimPrefix(s, "ssh://")
	b := &inventory.Bastion{}
	if at := strings.LastIndex(s, "@"); at >= 0 {
		b.User, s = s[:at], s[at+1:]
	}
	host, port := s, ""
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.Index(s, "]")
		if end < 0 {
			return nil, fmt.Errorf("unterminated [ in %q", s)
		}
		host = s[1:end]
		port = strings.TrimPrefix(s[end+1:], ":")
	case strings.Count(s, ":") == 1:
		host, port, _ = strings.Cut(s, ":")
	}
	if host == "" || !isAddress(host) {
		return nil, fmt.Errorf("%q is not a host name or address", host)
	}
	b.Address = host
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("port %q is not a number between 1 and 65535", port)
		}
		b.Port = n
	}
	return b, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
