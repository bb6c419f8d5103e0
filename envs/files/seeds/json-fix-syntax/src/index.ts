export const hello = () => 'hi';
