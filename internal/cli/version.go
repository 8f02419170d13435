package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gpukit/gpukit/internal/version"
	"github.com/gpukit/gpukit/manifests"
	"github.com/gpukit/gpukit/pkg/inventory"
	"github.com/gpukit/gpukit/pkg/ui"
)

func newVersionCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print gpukit's version, the defaults an inventory gets and the bill of materials",
		Long: `Print gpukit's version, the defaults an inventory gets when it says nothing, and the
bill of materials: every version gpukit pins (NVIDIA driver, CUDA, container toolkit,
Kubernetes, containerd, Docker), each Helm chart with its repository, each image gpukit
deploys itself, the Kubeflow releases it deploys and the driver/CUDA table it checks
versions against. Everything a run may fetch, for preparing mirrors.`,
		Example: `  gpukit version
  gpukit version -o json | jq -r '.bill.charts[] | .repo + " " + .name + " " + .version'`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := decideOutput(cmd.OutOrStdout(), output)
			if err != nil {
				return err
			}
			info, bill := version.Get(), manifests.Bill()
			defaults := inventory.Defaults()
			out := o.W
			if o.Format == ui.FormatJSON {
				m := map[string]string{}
				for _, d := range defaults {
					m[d.Path] = d.Value
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					version.Info
					Defaults map[string]string `json:"defaults"`
					Bill     *manifests.BOM    `json:"bill"`
				}{info, m, bill})
			}
			fmt.Fprintf(out, "gpukit %s\ncommit: %s\n", info.Version, info.Commit)
			if info.Date != "" {
				fmt.Fprintf(out, "built: %s\n", info.Date)
			}
			fmt.Fprintf(out, "go: %s %s\n\ndefaults:\n", info.GoVersion, info.Platform)
			for _, d := range defaults {
				fmt.Fprintf(out, "  %-32s %s\n", d.Path, d.Value)
			}
			return writeBill(out, bill)
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

// writeBill prints the bill of materials as tables.
func writeBill(w io.Writer, b *manifests.BOM) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\nbill of materials (%s):\n", b.APIVersion)
	fmt.Fprintf(tw, "  Kubernetes minors\t1.%d to 1.%d\n", b.Kubernetes.MinMinor, b.Kubernetes.MaxMinor)
	fmt.Fprintf(tw, "\n  CHART\tVERSION\tREPOSITORY\tSHA256\n")
	for _, c := range b.Charts {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Name, c.Version, c.Repo, cmp.Or(c.SHA256, "-"))
	}
	fmt.Fprintf(tw, "\n  IMAGE\tREFERENCE\tDIGEST\n")
	for _, im := range b.Images {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", im.Name, im.Ref, cmp.Or(im.Digest, "-"))
	}
	fmt.Fprintf(tw, "\n  KUBEFLOW\tARCHIVE\tSHA256\n")
	for _, r := range b.Kubeflow.Releases {
		def := ""
		if r.Version == b.Kubeflow.Default {
			def = " (default)"
		}
		fmt.Fprintf(tw, "  %s%s\t%s\t%s\n", r.Version, def, b.KubeflowArchive(r.Version), cmp.Or(r.SHA256, "-"))
	}
	fmt.Fprintf(tw, "\n  SIGNING KEY OF\tPACKAGE MANAGER\tFILE\tFINGERPRINTS\n")
	for _, k := range b.SigningKeys {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", k.Repository, cmp.Or(k.PackageManager, "apt, dnf"), k.File, strings.Join(k.Fingerprints, " "))
	}
	fmt.Fprintf(tw, "\n  CUDA\tMINIMUM DRIVER\n")
	for _, r := range b.CUDADrivers {
		fmt.Fprintf(tw, "  %s\t%s\n", r.CUDA, r.MinDriver)
	}
	fmt.Fprintf(tw, "\n  GPU GENERATION\tDRIVER BRANCHES\tCUDA\tOPEN MODULES\tPCI DEVICE IDS\n")
	for _, a := range b.GPUArchitectures {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", a.Name, span(itoa(a.FirstBranch), itoa(a.LastBranch)), span(a.FirstCUDA, a.LastCUDA),
			map[bool]string{true: "yes", false: "no"}[a.OpenModules], strings.Join(a.PCIDevices, " "))
	}
	return tw.Flush()
}

// span prints a range whose ends may be open ("" : any): "470 or older",
// "570 or newer", "450 to 580", "any".
func span(first, last string) string {
	switch {
	case first == "" && last == "":
		return "any"
	case first == "":
		return last + " or older"
	case last == "":
		return first + " or newer"
	}
	return first + " to " + last
}

func itoa(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}
