package serve

import (
	"regexp"
	"strings"
	"sync"
)

// The operations layer's errors are written for the command line: they
// say what to type next. A page says what to press instead, when the
// page has that action: pageWords rewrites the commands of an error's
// message that a run's page offers as buttons, and drops its "try:"
// lines, which name commands and placeholders (RUN_ID) the page has no
// use for.

// pageCommand is a command a run's page offers, and what the page calls
// it.
type pageCommand struct {
	re   *regexp.Regexp
	page string
}

// pageCommands returns the commands a run's page offers. They are
// compiled on first use, not by every flow command.
var pageCommands = sync.OnceValue(func() []pageCommand {
	return []pageCommand{
		{regexp.MustCompile(`flow resume [^\s,;:)]+( --engine \w+)?( --takeover)?`), "Resume (on the run's page)"},
		{regexp.MustCompile(`flow retry [^\s,;:)]+( --engine \w+)?`), "Retry failed steps (on the run's page)"},
		{regexp.MustCompile(`flow continue [^\s,;:)]+( --engine \w+)?`), "Continue (on the run's page)"},
		{regexp.MustCompile(`flow approve [^\s,;:)]+ [^\s,;:)]+( --input [^\s,;:)]+)*`), "the approval form on the run's page"},
		{regexp.MustCompile(`flow reject [^\s,;:)]+ [^\s,;:)]+( --reason '[^']*')?`), "the Reject form on the run's page"},
		{regexp.MustCompile(`flow cancel [^\s,;:)]+( --engine \w+)?`), "Cancel (on the run's page)"},
		{regexp.MustCompile(`flow resume\b`), "Resume"},
		{regexp.MustCompile(`flow continue\b`), "Continue"},
	}
})

// notAnID are the words that follow a command's name in a sentence
// where no run id does.
var notAnID = map[string]bool{"after": true, "then": true, "takes": true, "continues": true, "to": true, "with": true, "and": true, "or": true}

// pageWords rewrites an error's message for a page.
func pageWords(msg string) string {
	var lines []string
	for _, l := range strings.Split(msg, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "try: ") {
			continue
		}
		lines = append(lines, l)
	}
	msg = strings.Join(lines, "\n")
	for _, c := range pageCommands() {
		msg = c.re.ReplaceAllStringFunc(msg, func(cmd string) string {
			if f := strings.Fields(cmd); len(f) > 2 && notAnID[f[2]] {
				// "flow resume after approval": the command itself.
				return strings.ToUpper(f[1][:1]) + f[1][1:] + strings.TrimPrefix(cmd, f[0]+" "+f[1])
			}
			return c.page
		})
	}
	if msg != "" {
		msg = strings.ToUpper(msg[:1]) + msg[1:]
	}
	return msg
}
