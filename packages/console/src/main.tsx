/** Entry point of the console bundle. */
import { render } from 'preact';
import { App } from './app';
import '@xterm/xterm/css/xterm.css';
import './styles.css';

const root = document.getElementById('app');
if (root) render(<App />, root);
