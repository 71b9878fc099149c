package admin_test

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// screenshotEnv names a file the browser test writes its screenshot of
// the page to (docs/admin.png is made so: see docs/keys.md).
const screenshotEnv = "DRAGOMAN_ADMIN_SCREENSHOT"

// TestAdminPageInChromium logs in to /admin in a real headless Chromium
// (Debian's chromium; .ci/run installs it, and without it the test fails),
// and reads the keys table and the charts as a person sees them.
func TestAdminPageInChromium(t *testing.T) {
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("no chromium here: install Debian's chromium package (apt-get install -y chromium); .ci/run does")
	}
	f := newFixture(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1320, 1100),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()

	err = chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/admin"),
		chromedp.WaitVisible(chromedp.ID("key")),
	)
	if err != nil {
		t.Fatalf("chromium, the login page: %v", err)
	}
	loginTitle := run(t, ctx, chromedp.Title())
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.ID("key"), masterKey),
		chromedp.Click(chromedp.CSS(`button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.ID("keys")),
	)
	if err != nil {
		t.Fatalf("chromium, logging in: %v", err)
	}
	rows := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("#keys tbody tr").length`))
	bars := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("figure.chart svg rect[height]").length`))
	charts := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("figure.chart svg").length`))
	cookies := run(t, ctx, chromedp.Evaluate[string](`document.cookie`))
	keysText := run(t, ctx, chromedp.Text(chromedp.ID("keys")))
	backendsText := run(t, ctx, chromedp.Text(chromedp.ID("backends")))
	html := run(t, ctx, chromedp.OuterHTML(chromedp.CSS("html")))
	shot := run(t, ctx, chromedp.FullScreenshot(100))
	if loginTitle != "Dragoman admin: log in" {
		t.Errorf("login page title %q", loginTitle)
	}
	if rows != 3 || charts != 2 || bars < 20 {
		t.Errorf("%d key rows (want 3), %d charts (want 2), %d bars", rows, charts, bars)
	}
	for _, want := range []string{"alice", "bob", "ci-bot", "revoked", "active", "5 000 000 / 1w"} {
		if !strings.Contains(strings.ReplaceAll(keysText, "\u202f", " "), want) {
			t.Errorf("the keys table lacks %q:\n%s", want, keysText)
		}
	}
	if !strings.Contains(backendsText, "gpu-1") || !strings.Contains(backendsText, "cooling") {
		t.Errorf("backends table:\n%s", backendsText)
	}
	if cookies != "" {
		t.Errorf("the page's script can read the session cookie (not HttpOnly): %q", cookies)
	}
	for _, s := range append(f.secrets, masterKey) {
		if strings.Contains(html, s) {
			t.Fatal("a key in the page's HTML")
		}
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 1000 || b.Dy() < 600 {
		t.Errorf("screenshot %v", b)
	}
	if out := os.Getenv(screenshotEnv); out != "" {
		if err := os.WriteFile(out, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// run runs one action of chromedp and returns its value.
func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return v
}
