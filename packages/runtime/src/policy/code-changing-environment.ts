/**
 * Environment variables that change which code a command runs rather than
 * what it works on: a shell sources `BASH_ENV`, the dynamic loader maps
 * `LD_PRELOAD`, `PATH` decides which `rm` "cat" is. A policy that reads the
 * command line cannot see any of that, so an exec that sets one is refused
 * unless the contract names it in `exec.allowEnv`.
 */

/** Names refused unless allowed by name. */
export const CODE_CHANGING_NAMES: ReadonlySet<string> = new Set([
  'PATH',
  'BASH_ENV',
  'ENV',
  'SHELLOPTS',
  'BASHOPTS',
  'PROMPT_COMMAND',
  'PS4',
  'IFS',
  'CDPATH',
  'GLOBIGNORE',
  'HOME',
  'ZDOTDIR',
  'GCONV_PATH',
  'HOSTALIASES',
  'LOCPATH',
  'NLSPATH',
  'MALLOC_CONF',
  'PYTHONSTARTUP',
  'PYTHONPATH',
  'PYTHONHOME',
  'PYTHONINSPECT',
  'PYTHONUSERBASE',
  'PYTHONEXECUTABLE',
  'PERL5LIB',
  'PERL5OPT',
  'PERLLIB',
  'PERL5DB',
  'RUBYOPT',
  'RUBYLIB',
  'NODE_OPTIONS',
  'NODE_PATH',
  'JAVA_TOOL_OPTIONS',
  '_JAVA_OPTIONS',
  'JDK_JAVA_OPTIONS',
  'CLASSPATH',
  'LUA_INIT',
  'LUA_PATH',
  'LUA_CPATH',
  'TCLLIBPATH',
  'GIT_SSH',
  'GIT_SSH_COMMAND',
  'GIT_EXEC_PATH',
  'GIT_EDITOR',
  'GIT_PAGER',
  'GIT_ASKPASS',
  'GIT_CONFIG_GLOBAL',
  'GIT_CONFIG_SYSTEM',
  'GIT_CONFIG_PARAMETERS',
  'EDITOR',
  'VISUAL',
  'PAGER',
  'SSH_ASKPASS',
  'SUDO_ASKPASS',
  'BROWSER',
]);

/** Prefixes of families refused the same way: loader variables, exported bash functions, git config injection. */
export const CODE_CHANGING_PREFIXES: readonly string[] = ['LD_', 'BASH_FUNC_', 'GIT_CONFIG_KEY_', 'GIT_CONFIG_VALUE_', 'GIT_CONFIG_COUNT', 'DYLD_'];

/** True when setting `name` can change which code a command runs. */
export function isCodeChangingEnvironment(name: string): boolean {
  return CODE_CHANGING_NAMES.has(name) || CODE_CHANGING_PREFIXES.some((prefix) => name.startsWith(prefix));
}
