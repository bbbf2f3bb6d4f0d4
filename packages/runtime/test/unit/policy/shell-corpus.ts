/**
 * Commands for the shell analysis tests: the eight of issue 22, which
 * deleted a file while the analysis called them analysable without listing
 * rm, and a generator of random commands for the differential test.
 */

/** The eight commands of issue 22 (F is the file they delete). */
export const ISSUE_22_COMMANDS: readonly string[] = [
  'echo x \r#; rm -f F',
  "echo $'\\' ; rm -f F\necho '",
  '[[ x; rm -f F; ]]',
  '((rm -f F) )',
  'echo ${x:-{}; rm -f F\n}',
  'bash -c "coproc NAME { rm -f F; }"',
  'echo F | xargs --replace rm -f {}',
  "env -S 'rm\\_-f\\_F'",
];
