/**
 * Debian's Chromium (`apt-get install chromium`), driven by playwright-core
 * (never its own browser download), headless, with a fresh empty profile that
 * is removed on close. Tests that need a browser skip with a reason where
 * Chromium is not installed.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { chromium, type BrowserContext } from 'playwright-core';

/** Where Debian installs Chromium. */
export const CHROMIUM_PATH = '/usr/bin/chromium';

/** Why browser tests cannot run here, or undefined when they can. */
export function chromiumMissing(): string | undefined {
  return existsSync(CHROMIUM_PATH) ? undefined : `${CHROMIUM_PATH} is missing: apt-get install -y chromium (scripts/setup.sh does)`;
}

/** A browser with its own profile; `close()` ends the browser and removes the profile. */
export class HeadlessChromium {
  private constructor(
    readonly context: BrowserContext,
    private readonly profileDir: string,
  ) {}

  /** Starts Chromium with an empty profile and the given window size. */
  static async launch(viewport: { width: number; height: number } = { width: 1280, height: 900 }): Promise<HeadlessChromium> {
    const profileDir = mkdtempSync('/var/tmp/airlock-chromium-');
    try {
      const context = await chromium.launchPersistentContext(profileDir, {
        executablePath: CHROMIUM_PATH,
        headless: true,
        viewport,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
      });
      return new HeadlessChromium(context, profileDir);
    } catch (error) {
      rmSync(profileDir, { recursive: true, force: true });
      throw error;
    }
  }

  /** Ends the browser process and removes its profile. */
  async close(): Promise<void> {
    await this.context.close();
    rmSync(this.profileDir, { recursive: true, force: true });
  }
}
