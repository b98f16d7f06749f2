package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/template"
	"text/template/parse"
	"time"
)

// Limits on GET /report?format=<template>. The status address may be
// reachable beyond loopback, and a 248-byte template with nested
// `printf "%01000000d"` used to take the router to out-of-memory. Every
// limit turns into 400 Bad Request.
const (
	maxTemplateSize   = 4096            // bytes of template source
	maxTemplateOutput = 4 << 20         // bytes written
	maxTemplateString = 64 << 10        // bytes of any string a function builds
	maxTemplateWidth  = 1000            // printf width or precision
	maxTemplateNumber = 10000           // numeric literal
	maxTemplateSteps  = 1_000_000       // text and loop-body steps executed
	maxTemplateTime   = 2 * time.Second // execution time
	templateCheckTime = 1024            // steps between clock reads
)

// errTemplateLimit marks an error as a limit being hit.
var errTemplateLimit = errors.New("over limit")

// runReportTemplate parses format and executes it on rep within the limits.
func runReportTemplate(format string, rep *Report) ([]byte, error) {
	if len(format) > maxTemplateSize {
		return nil, fmt.Errorf("template of %d bytes is %w (max %d)", len(format), errTemplateLimit, maxTemplateSize)
	}
	tmpl, err := template.New("format").Funcs(templateFuncs).Funcs(boundedFuncs).Parse(format)
	if err != nil {
		return nil, fmt.Errorf("invalid format template: %w", err)
	}
	if len(tmpl.Templates()) > 1 {
		return nil, fmt.Errorf("format template: define and block are not allowed")
	}
	if err := boundTree(tmpl.Tree.Root); err != nil {
		return nil, fmt.Errorf("format template: %w", err)
	}
	w := &boundedWriter{deadline: time.Now().Add(maxTemplateTime)}
	if err := tmpl.Execute(w, rep); err != nil {
		return nil, fmt.Errorf("format template failed: %w", err)
	}
	return w.buf.Bytes(), nil
}

// boundTree rejects template calls and large numeric literals, and puts
// an empty text node at the head of every list, so that each loop
// iteration and branch passes through boundedWriter, which counts steps
// and watches the clock even when nothing is printed.
func boundTree(n parse.Node) error {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := boundTree(c); err != nil {
				return err
			}
		}
		n.Nodes = append([]parse.Node{&parse.TextNode{NodeType: parse.NodeText, Pos: n.Pos}}, n.Nodes...)
	case *parse.TemplateNode:
		return fmt.Errorf("{{template}} is not allowed")
	case *parse.ActionNode:
		return boundTree(n.Pipe)
	case *parse.PipeNode:
		return boundPipe(n)
	case *parse.IfNode:
		return boundBranch(&n.BranchNode)
	case *parse.RangeNode:
		return boundBranch(&n.BranchNode)
	case *parse.WithNode:
		return boundBranch(&n.BranchNode)
	}
	return nil
}

func boundBranch(b *parse.BranchNode) error {
	for _, n := range []parse.Node{b.Pipe, b.List, b.ElseList} {
		if err := boundTree(n); err != nil {
			return err
		}
	}
	return nil
}

func boundPipe(p *parse.PipeNode) error {
	if p == nil {
		return nil
	}
	for _, cmd := range p.Cmds {
		for _, arg := range cmd.Args {
			if err := boundArg(arg); err != nil {
				return err
			}
		}
	}
	return nil
}

func boundArg(arg parse.Node) error {
	switch a := arg.(type) {
	case *parse.NumberNode:
		if (a.IsInt && (a.Int64 > maxTemplateNumber || a.Int64 < -maxTemplateNumber)) ||
			(a.IsUint && a.Uint64 > maxTemplateNumber) ||
			(a.IsFloat && (a.Float64 > maxTemplateNumber || a.Float64 < -maxTemplateNumber)) || a.IsComplex {
			return fmt.Errorf("number %s is %w (max %d)", a.Text, errTemplateLimit, maxTemplateNumber)
		}
	case *parse.PipeNode:
		return boundPipe(a)
	}
	return nil
}

// boundedWriter collects the output up to maxTemplateOutput and fails
// execution after maxTemplateSteps writes or maxTemplateTime.
type boundedWriter struct {
	buf      bytes.Buffer
	steps    int
	deadline time.Time
}

func (w *boundedWriter) Write(p []byte) (int, error) {
	w.steps++
	if w.steps > maxTemplateSteps {
		return 0, fmt.Errorf("more than %d steps: %w", maxTemplateSteps, errTemplateLimit)
	}
	if w.steps%templateCheckTime == 0 && time.Now().After(w.deadline) {
		return 0, fmt.Errorf("execution longer than %v: %w", maxTemplateTime, errTemplateLimit)
	}
	if w.buf.Len()+len(p) > maxTemplateOutput {
		return 0, fmt.Errorf("output larger than %d bytes: %w", maxTemplateOutput, errTemplateLimit)
	}
	return w.buf.Write(p)
}

var _ io.Writer = (*boundedWriter)(nil)

// boundedFuncs replace the builtins that build strings from their
// arguments, so that no call can build a string above maxTemplateString.
var boundedFuncs = template.FuncMap{
	"printf":   boundedPrintf,
	"print":    bounded("print", fmt.Sprint),
	"println":  bounded("println", fmt.Sprintln),
	"html":     bounded("html", template.HTMLEscaper),
	"js":       bounded("js", template.JSEscaper),
	"urlquery": bounded("urlquery", template.URLQueryEscaper),
}

func bounded(name string, f func(...any) string) func(...any) (string, error) {
	return func(args ...any) (string, error) {
		if err := checkArgs(name, args); err != nil {
			return "", err
		}
		return checkResult(name, f(args...))
	}
}

func boundedPrintf(format string, args ...any) (string, error) {
	if err := checkVerbs(format); err != nil {
		return "", err
	}
	if err := checkArgs("printf", append([]any{format}, args...)); err != nil {
		return "", err
	}
	return checkResult("printf", fmt.Sprintf(format, args...))
}

// checkArgs bounds the summed printed size of args before a call.
func checkArgs(name string, args []any) error {
	total := 0
	for _, a := range args {
		switch v := a.(type) {
		case string:
			total += len(v)
		case []byte:
			total += len(v)
		default:
			total += 64 // scalars; structs are printed by the call and checked after
		}
	}
	if total > maxTemplateString {
		return fmt.Errorf("%s of %d bytes of arguments is %w (max %d)", name, total, errTemplateLimit, maxTemplateString)
	}
	return nil
}

func checkResult(name, s string) (string, error) {
	if len(s) > 6*maxTemplateString {
		return "", fmt.Errorf("%s result of %d bytes is %w", name, len(s), errTemplateLimit)
	}
	return s, nil
}

// checkVerbs rejects printf verbs with a width or precision above
// maxTemplateWidth, or given as an argument (*).
func checkVerbs(format string) error {
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		n := 0
		for i++; i < len(format) && strings.IndexByte("+-# 0123456789.*[]", format[i]) >= 0; i++ {
			c := format[i]
			switch {
			case c == '*':
				return fmt.Errorf("printf: * width is not allowed")
			case c >= '0' && c <= '9':
				n = n*10 + int(c-'0')
				if n > maxTemplateWidth {
					return fmt.Errorf("printf: width or precision above %d is %w", maxTemplateWidth, errTemplateLimit)
				}
			default:
				n = 0
			}
		}
	}
	return nil
}
