package docgen

import (
	"bytes"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// Files returns the references of the command tree under root, by
// their paths beneath docs/reference: cli/<command>.md, one Markdown
// page per available command, and man/<command>.1, its man page, with
// workflow.md, the workflow file's reference, as given.
func Files(root *cobra.Command, workflow []byte) (map[string][]byte, error) {
	root.InitDefaultCompletionCmd()
	files := map[string][]byte{"workflow.md": workflow}
	var walk func(c *cobra.Command) error
	walk = func(c *cobra.Command) error {
		if !c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand() {
			return nil
		}
		c.DisableAutoGenTag = true
		base := strings.ReplaceAll(c.CommandPath(), " ", "_")
		var md bytes.Buffer
		if err := doc.GenMarkdownCustom(c, &md, func(s string) string { return s }); err != nil {
			return fmt.Errorf("markdown of %s: %w", c.CommandPath(), err)
		}
		files[path.Join("cli", base+".md")] = md.Bytes()
		var man bytes.Buffer
		if err := doc.GenMan(c, manHeader(), &man); err != nil {
			return fmt.Errorf("man page of %s: %w", c.CommandPath(), err)
		}
		files[path.Join("man", strings.ReplaceAll(c.CommandPath(), " ", "-")+".1")] = undated(man.Bytes())
		for _, sub := range c.Commands() {
			if err := walk(sub); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root); err != nil {
		return nil, err
	}
	return files, nil
}

// noDate is the date the man pages are made with, and then taken out
// again: a page that carried the day it was made would differ from the
// repository's every day.
var noDate = time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC)

func manHeader() *doc.GenManHeader {
	d := noDate
	return &doc.GenManHeader{Section: "1", Date: &d, Source: "flow", Manual: "flow manual"}
}

// undated removes noDate from a man page's title line.
func undated(page []byte) []byte {
	return bytes.Replace(page, []byte(` "`+noDate.Format("Jan 2006")+`" `), []byte(` "" `), 1)
}
