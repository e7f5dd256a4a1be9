// Package textfmt lays out the text of help and manual pages: filled
// paragraphs, two-column tables, shell commands cut into lines that still
// paste as one, and roff for man.
package textfmt

import (
	"fmt"
	"strconv"
	"strings"
)

// Table lays out rows of a name and its text, indented by two spaces,
// the texts in one column no further right than maxLeft; a longer name
// puts its text on the next line.
func Table(rows [][2]string, width, maxLeft int) string {
	col := 0
	for _, r := range rows {
		if l := len([]rune(r[0])); l <= maxLeft && l > col {
			col = l
		}
	}
	var b strings.Builder
	indent := strings.Repeat(" ", 2+col+2)
	for _, r := range rows {
		left := "  " + r[0]
		if len([]rune(r[0])) > col {
			b.WriteString(left + "\n")
			b.WriteString(Wrap(r[1], width, indent, indent))
			continue
		}
		first := left + strings.Repeat(" ", 2+col+2-len([]rune(left)))
		b.WriteString(Wrap(r[1], width, first, indent))
	}
	return b.String()
}

// Wrap fills text into lines of at most width columns, the first starting
// with first and the others with indent.
func Wrap(text string, width int, first, indent string) string {
	var b strings.Builder
	line := first
	empty := true
	for _, word := range strings.Fields(text) {
		if !empty && len([]rune(line))+1+len([]rune(word)) > width {
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			line, empty = indent, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	b.WriteString(strings.TrimRight(line, " ") + "\n")
	return b.String()
}

// ShellLines cuts a shell command into lines of at most width columns
// that still paste as one command: each but the last ends with " \\", the
// next is indented, and a cut falls only before a flag, a redirection or
// a pipe, so that a flag stays with its value, and never inside quotes.
// A part longer than width stays whole.
func ShellLines(cmd string, width int) []string {
	var parts []string
	for _, w := range shellWords(cmd) {
		if n := len(parts); n > 0 && !strings.HasPrefix(w, "-") && !strings.ContainsAny(w[:1], "<>|&") {
			parts[n-1] += " " + w
			continue
		}
		parts = append(parts, w)
	}
	var lines []string
	line := ""
	for _, p := range parts {
		switch {
		case line == "":
			line = p
		case len([]rune(line))+1+len([]rune(p))+2 <= width:
			line += " " + p
		default:
			lines = append(lines, line+" \\")
			line = "    " + p
		}
	}
	return append(lines, line)
}

// shellWords splits cmd at spaces outside quotes, keeping the spaces
// inside them.
func shellWords(cmd string) []string {
	var words []string
	var quote rune
	start := -1
	for i, r := range cmd {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == ' ':
			if start >= 0 {
				words = append(words, cmd[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		words = append(words, cmd[start:])
	}
	return words
}

// Paragraphs re-fills a description: paragraphs are separated by empty
// lines; a line that starts with spaces is kept as it is (a list).
func Paragraphs(text string, width int) string {
	var b strings.Builder
	for i, para := range strings.Split(strings.TrimSpace(text), "\n\n") {
		if i > 0 {
			b.WriteString("\n")
		}
		var run []string
		flush := func() {
			if len(run) > 0 {
				b.WriteString(Wrap(strings.Join(run, " "), width, "", ""))
				run = nil
			}
		}
		for _, line := range strings.Split(para, "\n") {
			if strings.HasPrefix(line, " ") {
				flush()
				b.WriteString(line + "\n")
				continue
			}
			run = append(run, line)
		}
		flush()
	}
	return b.String()
}

// Capitalize returns s with its first letter in upper case.
func Capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// UnquoteUsage splits a flag's usage into the placeholder that backticks
// mark in it (`PATH`) and the text without the backticks.
func UnquoteUsage(usage string) (placeholder, text string) {
	before, rest, ok := strings.Cut(usage, "`")
	if !ok {
		return "", usage
	}
	name, after, ok := strings.Cut(rest, "`")
	if !ok {
		return "", usage
	}
	return name, before + name + after
}

// Roff escapes text for the body of a man page: backslashes, hyphens
// (which man prints as minus signs in options), characters outside ASCII,
// and a dot or quote that would start a request.
func Roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	var ascii strings.Builder
	for _, r := range s {
		if r < 0x80 {
			ascii.WriteRune(r)
		} else {
			fmt.Fprintf(&ascii, `\[u%04X]`, r)
		}
	}
	s = ascii.String()
	var b strings.Builder
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			b.WriteString("\n")
		}
		if strings.HasPrefix(line, ".") || strings.HasPrefix(line, "'") {
			b.WriteString(`\&`)
		}
		b.WriteString(line)
	}
	return b.String()
}

// RoffParagraphs renders a description: paragraphs as .PP, and indented
// lines (a list, commands) as a block laid out again for blockWidth
// columns.
func RoffParagraphs(text string, blockWidth int) string {
	var b strings.Builder
	for _, para := range strings.Split(strings.TrimSpace(text), "\n\n") {
		b.WriteString(".PP\n")
		var run, block []string
		flush := func() {
			if len(run) > 0 {
				b.WriteString(Roff(strings.Join(run, " ")) + "\n")
				run = nil
			}
			if len(block) > 0 {
				b.WriteString(".nf\n" + Roff(strings.Join(Refit(block, blockWidth), "\n")) + "\n.fi\n")
				block = nil
			}
		}
		for _, line := range strings.Split(para, "\n") {
			if strings.HasPrefix(line, " ") {
				if len(run) > 0 {
					flush()
				}
				block = append(block, line)
				continue
			}
			if len(block) > 0 {
				flush()
			}
			run = append(run, line)
		}
		flush()
	}
	return b.String()
}

// Refit lays out again for width columns the indented lines of a
// description, written for the help page, which starts them at column 0.
// A list item whose text starts after a gap of two spaces ("  --relock
// changes …", its next lines indented to that text) is filled again under
// that indent; any other line too long is cut as a command, by
// shellLines.
func Refit(lines []string, width int) []string {
	var out []string
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		indent := leadingSpaces(line)
		hang := hangColumn(line, indent)
		if hang < 0 {
			if len([]rune(line)) <= width {
				out = append(out, line)
				continue
			}
			for _, l := range ShellLines(line[indent:], width-indent) {
				out = append(out, line[:indent]+l)
			}
			continue
		}
		text := line[hang:]
		for i+1 < len(lines) && leadingSpaces(lines[i+1]) == hang {
			i++
			text += " " + strings.TrimSpace(lines[i])
		}
		filled := Wrap(text, width, line[:hang], strings.Repeat(" ", hang))
		out = append(out, strings.Split(strings.TrimSuffix(filled, "\n"), "\n")...)
	}
	return out
}

func leadingSpaces(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }

// hangColumn returns where the text of a list item starts: after its
// first word and a gap of at least two spaces; -1 when there is no gap.
func hangColumn(line string, indent int) int {
	gap := strings.Index(line[indent:], "  ")
	if gap <= 0 {
		return -1
	}
	start := indent + gap
	return start + leadingSpaces(line[start:])
}

// Plural is n and unit, in the plural unless n is 1: "1 byte", "2 bytes".
func Plural(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// QuoteShort quotes s, a value someone else sent, for an error message:
// its first 64 bytes, and an ellipsis when there are more, so that an
// answer never repeats a long value whole.
func QuoteShort(s string) string {
	const most = 64
	if len(s) > most {
		return strconv.Quote(s[:most]) + "…"
	}
	return strconv.Quote(s)
}
