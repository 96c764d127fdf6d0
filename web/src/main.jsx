// Entry: exchange a login ticket from the URL for a session cookie (then drop it from the URL and the
// history), else resume the session the cookie holds, else explain how to log in.
import { createRoot } from 'react-dom/client';
import { login, session } from './api.js';
import App from './App.jsx';
import { LoggedOut } from './LoggedOut.jsx';

const LOGIN = '#login=';

async function start() {
  const root = createRoot(document.getElementById('root'));
  let who = null;
  let problem = '';
  try {
    if (window.location.hash.startsWith(LOGIN)) {
      const ticket = window.location.hash.slice(LOGIN.length);
      window.history.replaceState(null, '', `${window.location.pathname}#/jobs`); // the ticket leaves the URL at once
      who = await login(ticket);
    } else {
      who = await session();
    }
  } catch (err) {
    problem = err.message;
  }
  root.render(who ? <App user={who} /> : <LoggedOut problem={problem} />);
}

start();
