/** What the admin key in use may do: a `read` key sees everything and is offered no write. */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';

export interface Whoami {
  actor: string;
  role: 'admin' | 'read';
}

export const Access = createContext<Whoami>({ actor: 'anonymous', role: 'admin' });

/** Whether the screens should offer writes (create, save, delete, restore). */
export const useCanWrite = () => useContext(Access).role === 'admin';
