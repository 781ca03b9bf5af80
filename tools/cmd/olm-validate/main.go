// Command olm-validate validates an OLM bundle directory the way `operator-sdk bundle validate DIR
// --select-optional suite=operatorframework` does, and a file-based catalog the way `opm validate DIR` does,
// calling the same operator-framework libraries without building operator-sdk or opm.
//
//	olm-validate bundle DIR [--optional-values k=v,...]
//	olm-validate catalog DIR
//	olm-validate --version
//
// Bundle: operator-registry's format check (manifests/ and metadata/, annotations, media type), operator-sdk's
// content check (object kinds registry+v1 supports, object metadata, BundleValidator,
// ClusterServiceVersionValidator, CustomResourceDefinitionValidator) and the validators operator-sdk labels
// suite=operatorframework (operatorhubv2, capabilities, categories, alpha-deprecated-apis, good-practices).
// Each finding is printed as `level=error|warning msg="..."`; the exit status is 1 when any is an error.
// Catalog: declcfg.LoadFS then ConvertToModel, which is `opm validate` (pkg/lib/config.Validate).
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	apimanifests "github.com/operator-framework/api/pkg/manifests"
	apivalidation "github.com/operator-framework/api/pkg/validation"
	apierrors "github.com/operator-framework/api/pkg/validation/errors"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	registrybundle "github.com/operator-framework/operator-registry/pkg/lib/bundle"
	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// The validators operator-sdk v1.42 runs for --select-optional suite=operatorframework.
var operatorFramework = []interfaces.Validator{
	apivalidation.OperatorHubV2Validator,
	apivalidation.StandardCapabilitiesValidator,
	apivalidation.StandardCategoriesValidator,
	apivalidation.AlphaDeprecatedAPIsValidator,
	apivalidation.GoodPracticesValidator,
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Println("olm-validate " + libraryVersions())
		return
	}
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: olm-validate bundle DIR [--optional-values k=v,...] | catalog DIR | --version")
		os.Exit(2)
	}
	var code int
	switch os.Args[1] {
	case "bundle":
		code = validateBundle(os.Args[2], parseOptionalValues(os.Args[3:]))
	case "catalog":
		code = validateCatalog(os.Args[2])
	default:
		fmt.Fprintf(os.Stderr, "olm-validate: unknown command %q (bundle or catalog)\n", os.Args[1])
		code = 2
	}
	os.Exit(code)
}

// libraryVersions names the operator-framework module versions linked in, from the build info.
func libraryVersions() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(no build info)"
	}
	var parts []string
	for _, dep := range info.Deps {
		if strings.HasPrefix(dep.Path, "github.com/operator-framework/") {
			parts = append(parts, dep.Path+"@"+dep.Version)
		}
	}
	return strings.Join(parts, " ")
}

func parseOptionalValues(args []string) map[string]string {
	values := map[string]string{}
	for i := 0; i < len(args); i++ {
		if args[i] != "--optional-values" || i+1 == len(args) {
			continue
		}
		for _, pair := range strings.Split(args[i+1], ",") {
			if k, v, ok := strings.Cut(pair, "="); ok {
				values[k] = v
			}
		}
		i++
	}
	return values
}

func validateBundle(dir string, optionalValues map[string]string) int {
	logger := logrus.NewEntry(logrus.New())
	logger.Logger.SetOutput(os.Stderr)
	bundle, mediaType, err := readBundle(dir)
	if err != nil {
		report("error", fmt.Sprintf("reading the bundle in %s: %v", dir, err))
		return 1
	}
	failed := false
	if err := registrybundle.NewImageValidator(nil, logger).ValidateBundleFormat(dir); err != nil {
		report("error", fmt.Sprintf("error validating format in %s: %v", dir, err))
		failed = true
	}
	results := contentResults(bundle, mediaType)
	objs := bundle.ObjectsToValidate()
	for _, obj := range bundle.Objects {
		objs = append(objs, obj)
	}
	objs = append(objs, optionalValues)
	for _, v := range operatorFramework {
		results = append(results, v.Validate(objs...)...)
	}
	seen := map[string]bool{} // two validators of the suite may state the same finding
	for _, result := range results {
		for _, e := range result.Errors {
			failed = true
			if !seen["e"+e.Error()] {
				seen["e"+e.Error()] = true
				report("error", e.Error())
			}
		}
		for _, w := range result.Warnings {
			if !seen["w"+w.Error()] {
				seen["w"+w.Error()] = true
				report("warning", w.Error())
			}
		}
	}
	if failed {
		return 1
	}
	fmt.Println("All validation tests have completed successfully")
	return 0
}

// readBundle reads metadata/annotations.yaml for the manifests directory and loads the bundle from it.
func readBundle(dir string) (*apimanifests.Bundle, string, error) {
	manifestsDir := filepath.Join(dir, "manifests")
	raw, err := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml"))
	if err != nil {
		return nil, "", err
	}
	var annotations struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(raw, &annotations); err != nil {
		return nil, "", fmt.Errorf("metadata/annotations.yaml: %w", err)
	}
	if sub := annotations.Annotations["operators.operatorframework.io.bundle.manifests.v1"]; sub != "" {
		manifestsDir = filepath.Join(dir, sub)
	}
	mediaType, err := registrybundle.GetMediaType(manifestsDir)
	if err != nil {
		return nil, "", err
	}
	bundle, err := apimanifests.GetBundleFromDir(manifestsDir)
	if err != nil {
		return nil, "", err
	}
	return bundle, mediaType, nil
}

// contentResults is operator-sdk's internal/registry.ValidateBundleContent.
func contentResults(bundle *apimanifests.Bundle, mediaType string) []apierrors.ManifestResult {
	errs := apierrors.ManifestResult{Name: bundle.Name}
	for _, u := range bundle.Objects {
		gvk := u.GetObjectKind().GroupVersionKind()
		if gvk.Kind == "ClusterServiceVersion" || gvk.Kind == "CustomResourceDefinition" {
			continue
		}
		if supported, _ := registrybundle.IsSupported(gvk.Kind); mediaType == registrybundle.RegistryV1Type && !supported {
			errs.Add(apierrors.ErrInvalidBundle(fmt.Sprintf("unsupported media type %s for bundle object", mediaType), gvk))
			continue
		}
		noPrefix := func(string, bool) []string { return nil }
		if fieldErrs := validation.ValidateObjectMetaAccessor(metav1.Object(u), false, noPrefix, field.NewPath("metadata")); len(fieldErrs) > 0 {
			errs.Add(apierrors.ErrFailedValidation(fieldErrs.ToAggregate().Error(), u.GetName()))
		}
	}
	results := apivalidation.BundleValidator.Validate(bundle)
	if bundle.CSV != nil {
		results = append(results, apivalidation.ClusterServiceVersionValidator.Validate(bundle.CSV)...)
	} else {
		errs.Add(apierrors.ErrInvalidBundle("no ClusterServiceVersion in bundle", bundle.Name))
	}
	var crds []any
	for _, crd := range bundle.V1beta1CRDs {
		crds = append(crds, crd)
	}
	for _, crd := range bundle.V1CRDs {
		crds = append(crds, crd)
	}
	if len(crds) != 0 {
		results = append(results, apivalidation.CustomResourceDefinitionValidator.Validate(crds...)...)
	}
	return append(results, errs)
}

func validateCatalog(dir string) int {
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		report("error", fmt.Sprintf("%s is not a directory", dir))
		return 1
	}
	cfg, err := declcfg.LoadFS(context.Background(), os.DirFS(dir))
	if err == nil {
		_, err = declcfg.ConvertToModel(*cfg)
	}
	if err != nil {
		report("error", err.Error())
		return 1
	}
	fmt.Printf("catalog %s is valid: %d packages, %d channels, %d bundles\n", dir, len(cfg.Packages), len(cfg.Channels), len(cfg.Bundles))
	return 0
}

func report(level, msg string) {
	fmt.Printf("level=%s msg=%q\n", level, msg)
}
