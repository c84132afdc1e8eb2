package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/flow-run/flow/runner/ops"
)

// exportCmds are flow export and flow import, which carry a run's
// record from one CI job to the next.
func (a *app) exportCmds() []*cobra.Command {
	var repo, out string
	export := &cobra.Command{
		Use:   "export [RUN_ID] -o FILE|-",
		Short: "Write a run's record to a .tar.gz archive, for a later job to import",
		Long: `export writes the run directory .agents/runs/<run_id>/ (the newest run when RUN_ID
is left out), without its lock, to FILE as a gzip-compressed tar whose entries are
named <run_id>/... . The archive carries the run's record only, not the repository:
the job that imports it checks out the same commit first. -o - writes it to the
standard output.`,
		Example: "  flow export 20250115-143000-f8c1a4 -o run.tar.gz\n  flow export -o - | ssh ci-2 'cd app && flow import -'",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return ops.Usage("export needs -o FILE (or -o - for the standard output)")
			}
			if out == "-" {
				id, err := a.svc.ExportRun(repo, argOr(args), a.stdio.Out)
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdio.Err, "exported run %s to the standard output\n", id)
				a.warnLive(repo, id)
				return nil
			}
			id, err := a.svc.ExportRunFile(repo, argOr(args), out)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdio.Out, "exported run %s to %s\n", id, out)
			a.warnLive(repo, id)
			return nil
		},
	}
	export.Flags().StringVarP(&out, "output", "o", "", "archive to write; - for the standard output")
	export.Flags().StringVar(&repo, "repo", "", "repository of the run "+repoDefault)

	var irepo string
	var force bool
	imp := &cobra.Command{
		Use:   "import ARCHIVE|-",
		Short: "Make a run exported by flow export a run of this repository",
		Long: `import extracts an archive written by flow export into .agents/runs/<run_id>/.
It refuses (exit 2) an archive with anything but directories and regular files under
one run id, absolute names, "..", more than 100000 entries or 1 GiB, and a run id
that already exists unless --force replaces it. The imported run is re-rooted into
this repository on its next flow resume. - reads the archive from the standard input.`,
		Example: "  flow import run.tar.gz\n  flow approve 20250115-143000-f8c1a4 review && flow resume 20250115-143000-f8c1a4",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var archive io.Reader = a.stdio.In
			if args[0] != "-" {
				f, err := a.svc.FS.Open(args[0])
				if err != nil {
					return ops.Usage("import: %v", err)
				}
				defer f.Close()
				archive = f
			}
			id, err := a.svc.ImportRun(ops.ImportRequest{Repo: irepo, Archive: archive, Force: force})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdio.Out, "imported run %s\n", id)
			return nil
		},
	}
	imp.Flags().StringVar(&irepo, "repo", "", "repository to import into "+repoDefault)
	imp.Flags().BoolVar(&force, "force", false, "replace a run with the same id")
	return []*cobra.Command{export, imp}
}

// warnLive says on the standard error when a live runner held the run
// just exported: the archive is its record as it stood, and the logs of
// sessions then running may end mid-line.
func (a *app) warnLive(repo, id string) {
	st, err := a.svc.Status(repo, id)
	if err != nil || st.Over() || st.Liveness.Holder == nil {
		return
	}
	fmt.Fprintf(a.stdio.Err, "flow: warning: run %s is held by a live runner (pid %d on %s): the archive is its record as it stood, and running sessions' logs may end mid-line\n",
		id, st.Liveness.Holder.PID, st.Liveness.Holder.Host)
}
