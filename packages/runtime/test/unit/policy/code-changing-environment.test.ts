import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isCodeChangingEnvironment } from '../../../src/policy/code-changing-environment.js';

/** Each family docs/policy-vocabulary.md promises, with names a fixed list of names once let through. */
const FAMILIES: Record<string, string[]> = {
  'LD_*': ['LD_PRELOAD', 'LD_LIBRARY_PATH', 'LD_AUDIT', 'LD_BIND_NOW'],
  'DYLD_*': ['DYLD_INSERT_LIBRARIES'],
  'BASH_FUNC_*': ['BASH_FUNC_cat%%', 'BASH_FUNC_ls'],
  'PYTHON*': ['PYTHONSTARTUP', 'PYTHONPATH', 'PYTHONWARNINGS', 'PYTHONBREAKPOINT', 'PYTHONPLATLIBDIR', 'PYTHONSAFEPATH', 'PYTHON_HISTORY'],
  'PERL*': ['PERL5OPT', 'PERL5LIB', 'PERL_MB_OPT', 'PERL_MM_OPT', 'PERLIO', 'PERL5DB'],
  'RUBY*, GEM_*, BUNDLE_*': ['RUBYOPT', 'RUBYLIB', 'RUBY_GC_HEAP_INIT_SLOTS', 'GEM_PATH', 'BUNDLE_GEMFILE'],
  'NODE_*, npm config': ['NODE_OPTIONS', 'NODE_PATH', 'NODE_REPL_EXTERNAL_MODULE', 'npm_config_script_shell', 'NPM_CONFIG_NODE_OPTIONS'],
  Java: ['JAVA_TOOL_OPTIONS', '_JAVA_OPTIONS', 'JDK_JAVA_OPTIONS', 'JAVA_HOME', 'CLASSPATH'],
  'Lua, Tcl': ['LUA_INIT', 'LUA_INIT_5_4', 'LUA_PATH', 'LUA_CPATH_5_3', 'TCLLIBPATH', 'TCL_LIBRARY'],
  'GIT_*': [
    'GIT_SSH',
    'GIT_SSH_COMMAND',
    'GIT_EXEC_PATH',
    'GIT_CONFIG_COUNT',
    'GIT_CONFIG_KEY_0',
    'GIT_PROXY_COMMAND',
    'GIT_EXTERNAL_DIFF',
    'GIT_DIR',
    'GIT_TEMPLATE_DIR',
    'GIT_SEQUENCE_EDITOR',
  ],
  shells: ['PATH', 'BASH_ENV', 'ENV', 'SHELL', 'SHELLOPTS', 'BASHOPTS', 'PROMPT_COMMAND', 'PS4', 'IFS', 'CDPATH', 'GLOBIGNORE', 'HOME', 'ZDOTDIR'],
  'programs run by others': ['EDITOR', 'VISUAL', 'PAGER', 'MANPAGER', 'LESSOPEN', 'SSH_ASKPASS', 'SUDO_ASKPASS', 'BROWSER', 'MAKEFLAGS', 'OPENSSL_CONF'],
};

for (const [family, names] of Object.entries(FAMILIES)) {
  test(`every name of the ${family} family is refused`, () => {
    for (const name of names) assert.equal(isCodeChangingEnvironment(name), true, name);
  });
}

test('data for the program is not refused, in a family or out of one', () => {
  for (const name of [
    'GREETING',
    'DEBUG',
    'LANG',
    'TZ',
    'CI',
    'NODE_ENV',
    'GIT_AUTHOR_NAME',
    'GIT_COMMITTER_EMAIL',
    'PY',
    'PER',
    'XLD_PRELOAD',
    'MY_PYTHONPATH',
  ]) {
    assert.equal(isCodeChangingEnvironment(name), false, name);
  }
});

test('families are matched by exact case: pythonpath is another variable', () => {
  assert.equal(isCodeChangingEnvironment('pythonpath'), false);
  assert.equal(isCodeChangingEnvironment('ld_preload'), false);
});
