"""Headless Chromium (Debian's chromium + chromium-driver, driven by
python3-selenium) for the Theater page: the flags keep it off the
network and away from any profile of its own."""

import os
import shutil
import tempfile

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1400,1000")


def available():
    try:
        import selenium  # noqa: F401
    except ImportError:
        return False
    return bool(shutil.which("chromedriver") and (shutil.which("chromium") or os.path.exists("/usr/bin/chromium")))


class Browser:
    def __init__(self):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service as ChromeService
        self.profile = tempfile.mkdtemp(prefix="vigil-chromium-")
        opts = webdriver.ChromeOptions()
        opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        for f in CHROMIUM_FLAGS:
            opts.add_argument(f)
        opts.add_argument(f"--user-data-dir={self.profile}")
        self.driver = webdriver.Chrome(service=ChromeService(executable_path=shutil.which("chromedriver")),
                                       options=opts)
        self.driver.set_page_load_timeout(30)

    def close(self):
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)
