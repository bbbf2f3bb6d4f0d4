/**
 * Environment variables that change which code a command runs rather than
 * what it works on: a shell sources `BASH_ENV`, the dynamic loader maps
 * `LD_PRELOAD`, `PATH` decides which `rm` "cat" is. A policy that reads the
 * command line cannot see any of that, so an exec that sets one is refused
 * unless the contract names it in `exec.allowEnv`. Interpreters are refused
 * by family (every `PYTHON*`, `PERL*`, ...): each release adds start-up
 * variables, and a list of names falls behind.
 */

/** Single names refused unless allowed by name. */
export const CODE_CHANGING_NAMES: ReadonlySet<string> = new Set([
  'PATH',
  'BASH_ENV',
  'ENV',
  'SHELL',
  'SHELLOPTS',
  'BASHOPTS',
  'PROMPT_COMMAND',
  'PS4',
  'IFS',
  'CDPATH',
  'GLOBIGNORE',
  'HOME',
  'ZDOTDIR',
  'XDG_CONFIG_HOME',
  'XDG_CONFIG_DIRS',
  'GCONV_PATH',
  'HOSTALIASES',
  'LOCPATH',
  'NLSPATH',
  'MALLOC_CONF',
  'OPENSSL_CONF',
  'OPENSSL_ENGINES',
  'CLASSPATH',
  'MAKEFLAGS',
  'GNUMAKEFLAGS',
  'MFLAGS',
  'MAKEFILES',
  'EDITOR',
  'VISUAL',
  'PAGER',
  'MANPAGER',
  'LESSOPEN',
  'LESSCLOSE',
  'SYSTEMD_PAGER',
  'SSH_ASKPASS',
  'SUDO_ASKPASS',
  'BROWSER',
]);

/**
 * Families refused by prefix: the loaders' (`LD_*`, `DYLD_*`), exported bash
 * functions, and the start-up variables of interpreters, package managers
 * and git.
 */
export const CODE_CHANGING_PREFIXES: readonly string[] = [
  'LD_',
  'DYLD_',
  'BASH_FUNC_',
  'PYTHON',
  'PERL',
  'RUBY',
  'GEM_',
  'BUNDLE_',
  'NODE_',
  'NPM_CONFIG_',
  'npm_config_',
  'JAVA_',
  '_JAVA_',
  'JDK_',
  'LUA_',
  'TCL',
  'GIT_',
];

/** Names inside a refused family that are data for the program, not code: commit identities, Node's mode. */
export const DATA_IN_FAMILIES: readonly string[] = [
  'NODE_ENV',
  'GIT_AUTHOR_NAME',
  'GIT_AUTHOR_EMAIL',
  'GIT_AUTHOR_DATE',
  'GIT_COMMITTER_NAME',
  'GIT_COMMITTER_EMAIL',
  'GIT_COMMITTER_DATE',
];

/** True when setting `name` can change which code a command runs. */
export function isCodeChangingEnvironment(name: string): boolean {
  if (CODE_CHANGING_NAMES.has(name)) return true;
  return CODE_CHANGING_PREFIXES.some((prefix) => name.startsWith(prefix)) && !DATA_IN_FAMILIES.includes(name);
}
