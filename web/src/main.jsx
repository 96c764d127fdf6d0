// Entry: exchange a login ticket from the URL for a session cookie (then drop it from the URL and the
// history), else resume the session the cookie holds, else explain how to log in. A login link opened
// in a tab already on the dashboard only changes the hash: it starts the page again the same way.
import { createRoot } from 'react-dom/client';
import { closeConnections, login, prefetch, session, trainjobsPath } from './api.js';
import App from './App.jsx';
import { LoggedOut } from './LoggedOut.jsx';

const LOGIN = '#login=';
const root = createRoot(document.getElementById('root'));

async function start() {
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
  if (who && /^#\/?(jobs)?$/.test(window.location.hash)) { // the jobs list: its TrainJobs, asked beside the first render
    const { all, namespaces } = who.namespaces;
    (all ? [''] : namespaces).forEach((ns) => prefetch(trainjobsPath(ns)));
  }
  root.render(who ? <App key={who.user} user={who} /> : <LoggedOut problem={problem} />);
}

window.addEventListener('hashchange', () => {
  if (window.location.hash.startsWith(LOGIN)) start();
});
// Watches and followed logs hold HTTP/1.1 connections, of which a browser opens 6 per server: a page
// kept in the back/forward cache would hold them while the next page waits. It lets them go when it
// is hidden, and starts afresh when it is shown again.
window.addEventListener('pagehide', closeConnections);
window.addEventListener('pageshow', (event) => { if (event.persisted) window.location.reload(); });

start();
