import { analyzeCommand } from './dist/src/policy/shell-analysis.js';
const command = 'echo ' + 'a$b "c" '.repeat(25000);
for (let i = 0; i < 5; i++) analyzeCommand({ command });
